"""EDA views: the four operations, seeded; WordNet read from its database files; embedding-neighbour synonyms."""

from __future__ import annotations

import pytest

from biaslab.cscl import augment

SYN = {"quick": ["fast", "speedy"], "dog": ["hound"], "lazy": ["idle"]}.get


def fake(word):
    return SYN(word, [])


def test_eda_makes_n_views_seeded_and_uses_each_operation():
    text = "The QUICK brown fox jumps over the lazy dog!"
    views = augment.eda(text, fake, alpha=0.1, n_aug=4, seed=0)
    assert len(views) == 4 and views == augment.eda(text, fake, alpha=0.1, n_aug=4, seed=0)
    assert views != augment.eda(text, fake, alpha=0.1, n_aug=4, seed=1)
    base = augment.clean(text).split()
    assert base == ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"]
    many = augment.eda(text, fake, alpha=0.1, n_aug=40, seed=0)
    kinds = set()
    for v in many:
        w = v.split()
        if len(w) == len(base) and sorted(w) == sorted(base) and w != base:
            kinds.add("swap")
        elif len(w) < len(base):
            kinds.add("delete")
        elif len(w) > len(base) and any(x in w for x in ("fast", "speedy", "hound", "idle")):
            kinds.add("insert")
        elif len(w) == len(base) and any(x in w for x in ("fast", "speedy", "hound", "idle")):
            kinds.add("replace")
    assert kinds == {"swap", "delete", "insert", "replace"}
    assert augment.eda("!!!", fake, alpha=0.1, n_aug=2, seed=0) == ["!!!", "!!!"]
    kept = augment.eda(text, fake, alpha=0.5, n_aug=40, seed=0, keep={"dog", "hound"})
    assert all("dog" in v.split() and "hound" not in v.split() for v in kept)  # never replaced, deleted or inserted
    with pytest.raises(ValueError, match="cscl.augment.alpha"):
        augment.eda(text, fake, alpha=1.5, n_aug=2, seed=0)


def write_wordnet(folder):
    folder.mkdir()
    header = "  1 This software and database is being provided to you, the LICENSEE\n"
    data = "00000001 05 n 02 car 0 automobile 0 000 | a motor vehicle\n"
    (folder / "data.noun").write_text(header + data)
    offset = len(header)
    (folder / "index.noun").write_text(header + f"car n 1 0 1 0 {offset:08d}\nautomobile n 1 0 1 0 {offset:08d}\n")
    for pos in ("verb", "adj", "adv"):
        (folder / f"data.{pos}").write_text(header)
        (folder / f"index.{pos}").write_text(header)


def test_wordnet_reader_on_database_files(tmp_path):
    write_wordnet(tmp_path / "dict")
    wn = augment.WordNetSynonyms(tmp_path / "dict")
    assert wn("car") == ["automobile"] and wn("Automobile") == ["car"] and wn("boat") == []
    with pytest.raises(FileNotFoundError, match="wordnet-base"):
        augment.WordNetSynonyms(tmp_path / "nowhere")


@pytest.mark.slow
def test_embedding_neighbours_are_whole_words_of_the_vocabulary(minilm):
    first = minilm[0].auto_model
    nb = augment.EmbeddingNeighbours(minilm.tokenizer, first.embeddings.word_embeddings.weight.detach().numpy(), k=5)
    got = nb("happy")
    assert len(got) == 5 and "happy" not in got and all(w.isalpha() and w.islower() for w in got)
    assert nb("the") == [] and nb("xqzv") == []
    views = augment.eda("a happy dog runs", nb, alpha=0.25, n_aug=4, seed=0)
    assert len(views) == 4
