"""EDA views: the four operations, seeded; WordNet read from its database files; embedding-neighbour synonyms;
contextual-LM substitution and insertion (the sampler on given predictions, and the causal LM that makes them);
counterfactual views (identity terms swapped)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from biaslab.cscl import augment, terms

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


def test_replace_words_swaps_whole_identity_words_in_their_case():
    gender, race = terms.counterparts("genderqa_topic"), terms.counterparts("sbic_race")
    assert augment.replace_words("He told HER: his son, she's Mr. Shed.", gender) == \
        "She told HIM: her daughter, he's Mrs. Shed."
    assert augment.replace_words("Black and white; African-American blacks", race) == \
        "White and black; European-American whites"
    for task in ("genderqa_topic", "sbic_race"):  # every swapped word, and every counterpart, is an identity term
        pairs = terms.counterparts(task)
        assert set(pairs) | set(pairs.values()) <= terms.identity_terms(task)
    assert [gender[w] for w in ("he", "she", "her", "his", "woman")] == ["she", "he", "him", "her", "man"]


def test_views_with_swap_are_the_views_with_every_identity_term_swapped():
    text = "She said her husband and his son walked the lazy dog with a quick fox"
    keep, swap = terms.identity_terms("genderqa_topic"), terms.counterparts("genderqa_topic")
    plain = augment.views([text], "eda", alpha=0.3, n_aug=8, seed=0, keep=keep, synonym_fn=fake)
    swapped = augment.views([text], "eda", alpha=0.3, n_aug=8, seed=0, keep=keep, edits=swap, synonym_fn=fake)
    assert swapped == [[augment.replace_words(v, swap) for v in plain[0]]] and swapped != plain
    gendered = Counter(swap[w] for w in augment.clean(text).split() if w in keep)
    for v in swapped[0]:  # kept identity terms, each now its counterpart: the views disagree on every one
        assert Counter(w for w in v.split() if w in keep) == gendered


def test_proper_nouns_are_the_words_only_ever_capitalised_and_views_can_mask_them():
    texts = ["Ken Saro-Wiwa led MOSOP. She was a writer.", "Marie Curie's work, she said, was Curie's.",
             "The writer said: the man, Mr Ken, spoke."]
    nouns = terms.proper_nouns(texts, "genderqa_topic")
    # as a view splits them (hyphen, apostrophe); "the" / "she" occur lower-case; "mr" is an identity term
    assert nouns == {"ken", "saro", "wiwa", "mosop", "marie", "curies"}
    assert terms.view_edits("genderqa_topic", texts, swap=False, mask=False) is None
    masked = terms.view_edits("genderqa_topic", texts, swap=False, mask=True)
    assert masked == dict.fromkeys(nouns, terms.MASK_WORD)
    both = terms.view_edits("genderqa_topic", texts, swap=True, mask=True)
    assert both == terms.counterparts("genderqa_topic") | masked
    keep = terms.identity_terms("genderqa_topic")
    views = augment.views(texts[:1], "eda", alpha=0.3, n_aug=8, seed=0, keep=keep, edits=both, synonym_fn=fake)[0]
    for v in views:  # no name survives, and the kept "she" is now "he"
        assert not set(v.split()) & nouns and "she" not in v.split() and "he" in v.split()


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


TEXT = "The quick brown fox jumps over the lazy dog near her black car"
WORDS = augment.clean(TEXT).split()


def _predictions(words, k=3):
    """Fake LM output for :func:`augment.clm`: place g proposes the word it would replace (w_g) plus two new ones,
    plus an identity term; the word it replaces gets the largest probability."""
    cands, probs = [], []
    for g in range(1, len(words) + 1):
        here = words[g] if g < len(words) else "end"
        cands.append([here, f"new{g}a", f"new{g}b", "black"][: k + 1])
        probs.append([0.7, 0.1, 0.1, 0.1][: k + 1])
    return cands, np.array(probs)


def test_clm_substitute_replaces_content_words_from_the_predictions_seeded():
    cands, probs = _predictions(WORDS)
    keep = {"black", "her"}
    views = augment.clm(TEXT, cands, probs, action="substitute", alpha=0.25, n_aug=6, seed=0, keep=keep)
    assert len(views) == 6 and views == augment.clm(TEXT, cands, probs, action="substitute", alpha=0.25, n_aug=6,
                                                    seed=0, keep=keep)
    assert views != augment.clm(TEXT, cands, probs, action="substitute", alpha=0.25, n_aug=6, seed=1, keep=keep)
    n = int(0.25 * len(WORDS))
    for v in views:
        new = v.split()
        assert len(new) == len(WORDS) and new[0] == WORDS[0]  # the first word has no left context
        changed = [i for i, (a, b) in enumerate(zip(WORDS, new, strict=True)) if a != b]
        assert 1 <= len(changed) <= n
        for i in changed:
            assert new[i] in (f"new{i}a", f"new{i}b")  # from place i's candidates, never the word itself or "black"
            assert WORDS[i] not in augment.STOP_WORDS and WORDS[i] not in keep
        assert "black" in new  # a kept identity term is never replaced


def test_clm_insert_adds_predicted_words_and_keeps_the_rest_in_order():
    cands, probs = _predictions(WORDS)
    views = augment.clm(TEXT, cands, probs, action="insert", alpha=0.25, n_aug=4, seed=0, keep={"black"})
    n = int(0.25 * len(WORDS))
    for v in views:
        new = v.split()
        assert len(new) == len(WORDS) + n and new[0] == WORDS[0]
        it = iter(new)
        assert all(w in it for w in WORDS)  # the original words, in order, are a subsequence
        extra = list(new)
        for w in WORDS:
            extra.remove(w)
        assert len(extra) == n and "black" not in extra  # keep words are never inserted
        assert all(w.startswith("new") or w in WORDS or w == "end" for w in extra)


@pytest.mark.parametrize("action", ["substitute", "insert"])
def test_clm_unpredicted_places_leave_the_visible_words_as_the_full_predictions_do(action):
    # places beyond `visible` words are not predicted (None): each still takes its random draw, so the views' first
    # `visible` words -- all an encoder reading that many tokens sees -- equal those from every place predicted
    words = [f"word{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(40)]  # distinct, letters only (clean)
    text = " ".join(words)
    cands, probs = _predictions(words)
    for visible in (5, 12, 25):
        part = [c if g < visible else None for g, c in enumerate(cands, start=1)]
        part_probs = np.where(np.arange(len(cands))[:, None] < visible - 1, probs, np.nan)
        for seed in range(10):
            full = augment.clm(text, cands, probs, action=action, alpha=0.3, n_aug=4, seed=seed)
            cut = augment.clm(text, part, part_probs, action=action, alpha=0.3, n_aug=4, seed=seed)
            assert [v.split()[:visible] for v in full] == [v.split()[:visible] for v in cut]
            if action == "substitute":
                assert all(len(v.split()) == len(words) for v in cut)
            # the unseen tail is left unedited: no word written at or after place `visible`
            assert all(v.split()[len(v.split()) - (len(words) - visible):] == words[visible:] for v in cut)
    assert any(f != c for f, c in zip(augment.clm(text, cands, probs, action=action, alpha=0.3, n_aug=4, seed=0),
                                      augment.clm(text, part, part_probs, action=action, alpha=0.3, n_aug=4, seed=0),
                                      strict=True))  # the tails do differ: the test compares something


def test_clm_views_edge_cases_and_errors():
    assert augment.clm("!!!", [], np.zeros((0, 3)), action="insert", alpha=0.1, n_aug=2, seed=0) == ["!!!", "!!!"]
    # no predictions (a sentence beyond the LM's length cap): the cleaned text comes back unchanged
    assert augment.clm("Two words", [], np.zeros((0, 3)), action="substitute", alpha=0.5, n_aug=1, seed=0) == \
        ["two words"]
    with pytest.raises(ValueError, match="action"):
        augment.clm(TEXT, *_predictions(WORDS), action="swap", alpha=0.1, n_aug=1, seed=0)
    with pytest.raises(ValueError, match="cscl.augment.alpha"):
        augment.clm(TEXT, *_predictions(WORDS), action="insert", alpha=2.0, n_aug=1, seed=0)
    with pytest.raises(ValueError, match="unknown augmentation 'back_translation'"):
        augment.views([TEXT], "back_translation", alpha=0.1, n_aug=1, seed=0)
    with pytest.raises(ValueError, match="cscl.augment.lm"):
        augment.views([TEXT], "clm_insert", alpha=0.1, n_aug=1, seed=0)
    with pytest.raises(ValueError, match="cscl.augment.synonyms"):
        augment.views([TEXT], "eda", alpha=0.1, n_aug=1, seed=0)
    assert augment.views([TEXT], "eda", alpha=0.1, n_aug=2, seed=0, synonym_fn=fake) == \
        [augment.eda(TEXT, fake, alpha=0.1, n_aug=2, seed=0)]


@pytest.mark.slow
def test_next_words_predicts_whole_words_from_the_left_context(tmp_path):
    from conftest import model_dir

    lm = augment.NextWords(model_dir("smollm2-135m-instruct"), top_k=20, batch_size=4, device="cpu")
    sentences = [augment.clean(t).split() for t in ("The capital of France is Paris", "she went to the store")]
    (c1, p1), (c2, _) = lm(sentences)
    assert len(c1) == len(sentences[0]) and p1.shape == (len(sentences[0]), 20) and len(c2) == len(sentences[1])
    assert np.allclose(p1.sum(axis=1), 1.0, atol=1e-5) and (np.diff(p1, axis=1) <= 1e-7).all()  # sorted
    words = {w for row in c1 + c2 for w in row}
    assert all(len(w) >= 2 and w.isalpha() and w.islower() and w not in augment.STOP_WORDS for w in words)
    (short, _), = lm([sentences[0][:3]])  # left context only: the words after a place do not change it
    assert len(short) == 3 and [row[:3] for row in short] == [row[:3] for row in c1[:3]]
    assert lm(sentences[::-1])[0][0] == c2  # memoised per sentence, order-free
    views = augment.views(["The capital of France is Paris"], "clm_substitute", alpha=0.2, n_aug=3, seed=0, next_words=lm)
    assert len(views[0]) == 3 and all(len(v.split()) == 6 for v in views[0])
    # visible places only: the same first words, from a forward pass over the visible prefix only
    long = ["she said the old house by the river had been empty for years until a young family moved in and "
            "painted every room a different colour before the winter came"]
    (cut, cut_p), = lm([augment.clean(long[0]).split()], places=7)
    (full, full_p), = lm([augment.clean(long[0]).split()])
    assert len(cut) == len(full) and cut[:7] == full[:7] and all(c is None for c in cut[7:])
    assert np.allclose(cut_p[:7], full_p[:7], atol=1e-6) and np.isnan(cut_p[7:]).all()
    for action in ("clm_substitute", "clm_insert"):
        a = augment.views(long, action, alpha=0.3, n_aug=6, seed=0, next_words=lm, visible_words=8)
        b = augment.views(long, action, alpha=0.3, n_aug=6, seed=0, next_words=lm)
        assert [v.split()[:8] for v in a[0]] == [v.split()[:8] for v in b[0]]
    with pytest.raises(ValueError, match="visible_words"):
        augment.views(long, "clm_insert", alpha=0.3, n_aug=1, seed=0, next_words=lm, visible_words=0)
