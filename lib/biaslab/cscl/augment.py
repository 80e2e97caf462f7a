"""Views for the contrastive objectives (cscl App. B.3).

* :func:`eda` — Easy Data Augmentation (Wei & Zou 2019), the four operations of the authors' ``eda.py`` with the
  paper's ratio α = 0.1 and four augmented examples per example: synonym replacement, random insertion (of a
  synonym), random swap, random deletion; text first reduced to lower-case letters and spaces, as theirs is.
* Synonyms: :class:`WordNetSynonyms` reads WordNet 3.0's database files (``index.*`` / ``data.*``; on Debian the
  ``wordnet-base`` package, /usr/share/wordnet) — the source EDA uses through NLTK; no PyPI package ships WordNet.
  Offline default where WordNet is absent: :class:`EmbeddingNeighbours`, the nearest whole-word tokens of the
  encoder's own input-embedding matrix (word-embedding substitution, Wang & Yang 2015, as nlpaug's WordEmbsAug) —
  a documented substitute: neighbours are related words, not always synonyms.

The paper's other augmentations need models that are not obtainable here (wmt19-en-de for back-translation,
RoBERTa-base for contextual insert / substitute); see :mod:`biaslab.cscl` for what the pipeline does instead.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Collection, Sequence
from functools import cache
from pathlib import Path

# the stop words of the authors' eda.py (NLTK's list as they ship it)
STOP_WORDS = frozenset(
    ["i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours", "yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself", "they", "them", "their", "theirs", "themselves", "what", "which", "who", "whom", "this", "that", "these", "those", "am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "a", "an", "the", "and", "but", "if", "or", "because", "as", "until", "while", "of", "at", "by", "for", "with", "about", "against", "between", "into", "through", "during", "before", "after", "above", "below", "to", "from", "up", "down", "in", "out", "on", "off", "over", "under", "again", "further", "then", "once", "here", "there", "when", "where", "why", "how", "all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so", "than", "too", "very", "s", "t", "can", "will", "just", "don", "should", "now"])


def clean(text: str) -> str:
    """EDA's ``get_only_chars``: lower case, letters and single spaces only."""
    text = re.sub(r"[^a-z ]", " ", text.replace("’", "").replace("'", "").replace("-", " ").lower())
    return re.sub(" +", " ", text).strip()


class WordNetSynonyms:
    """Synonyms = the other lemmas of every synset of a word, from WordNet's database files in ``folder``
    (``index.noun`` … ``data.adv``). Raises a clear error naming the fix when the files are missing."""

    POS = ("noun", "verb", "adj", "adv")

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        missing = [f"{kind}.{p}" for p in self.POS for kind in ("index", "data") if not (self.folder / f"{kind}.{p}").is_file()]
        if missing:
            raise FileNotFoundError(f"WordNet files {missing} not found in {self.folder}: install Debian's wordnet-base "
                                    "(/usr/share/wordnet) or set cscl.augment.synonyms to embedding")
        self._index: dict[str, list[tuple[str, int]]] = {}
        for p in self.POS:
            for line in (self.folder / f"index.{p}").read_text(encoding="latin-1").splitlines():
                if line.startswith(" "):
                    continue  # licence header
                parts = line.split()
                n_synsets, n_ptr = int(parts[2]), int(parts[3])
                offsets = parts[6 + n_ptr:6 + n_ptr + n_synsets]
                self._index.setdefault(parts[0], []).extend((p, int(o)) for o in offsets)

    @cache  # noqa: B019 - one reader per run; the cache is the point
    def _lemmas(self, pos: str, offset: int) -> tuple[str, ...]:
        with open(self.folder / f"data.{pos}", encoding="latin-1") as fh:
            fh.seek(offset)
            parts = fh.readline().split()
        n = int(parts[3], 16)
        return tuple(parts[4 + 2 * i].lower() for i in range(n))

    def __call__(self, word: str) -> list[str]:
        out = dict.fromkeys(
            lemma.replace("_", " ") for pos, off in self._index.get(word.lower(), []) for lemma in self._lemmas(pos, off))
        out.pop(word.lower(), None)
        return [w for w in out if re.fullmatch(r"[a-z ]+", w)]


class EmbeddingNeighbours:
    """The ``k`` nearest whole-word tokens (cosine of the input embeddings) of a word that is one token of the
    encoder's vocabulary; other words have none. ``tokenizer`` and ``embeddings`` ([vocab, dim]) of the encoder."""

    def __init__(self, tokenizer, embeddings, *, k: int):
        import numpy as np

        vocab = tokenizer.get_vocab()
        self.words = [w for w, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
        emb = np.asarray(embeddings, dtype=np.float32)
        self.emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        self.ok = np.array([bool(re.fullmatch(r"[a-z]{2,}", w)) and w not in STOP_WORDS for w in self.words])
        self.ids = vocab
        self.k = k

    @cache  # noqa: B019
    def __call__(self, word: str) -> list[str]:
        import numpy as np

        i = self.ids.get(word.lower())
        if i is None or not self.ok[i]:
            return []
        sims = self.emb @ self.emb[i]
        sims[~self.ok] = -np.inf
        sims[i] = -np.inf
        return [self.words[j] for j in np.argsort(-sims)[: self.k]]


def _synonym_replacement(words, n, synonyms, rng, keep):
    new = list(words)
    candidates = [w for w in dict.fromkeys(words) if w not in STOP_WORDS and w not in keep]
    rng.shuffle(candidates)
    replaced = 0
    for w in candidates:
        syns = synonyms(w)
        if syns:
            choice = rng.choice(syns)
            new = [choice if x == w else x for x in new]
            replaced += 1
        if replaced >= n:
            break
    return " ".join(new).split()


def _random_insertion(words, n, synonyms, rng, keep):
    new = list(words)
    for _ in range(n):
        for _attempt in range(10):
            if not new:
                break
            syns = [w for w in synonyms(new[rng.randrange(len(new))]) if w not in keep]
            if syns:
                new.insert(rng.randrange(len(new) + 1), rng.choice(syns))
                break
    return new


def _random_swap(words, n, rng):
    new = list(words)
    for _ in range(n):
        if len(new) < 2:
            break
        i, j = rng.randrange(len(new)), rng.randrange(len(new))
        new[i], new[j] = new[j], new[i]
    return new


def _random_deletion(words, p, rng, keep):
    if len(words) <= 1:
        return list(words)
    kept = [w for w in words if w in keep or rng.random() > p]
    return kept or [words[rng.randrange(len(words))]]


def eda(text: str, synonyms: Callable[[str], Sequence[str]], *, alpha: float, n_aug: int, seed: int,
        keep: Collection[str] = frozenset()) -> list[str]:
    """``n_aug`` augmented copies of ``text`` (Wei & Zou's ``eda`` with α_sr = α_ri = α_rs = p_rd = ``alpha``):
    each operation makes ``int(n_aug / 4) + 1`` candidates, shuffled and cut to ``n_aug``. Seeded per call: the
    same text, synonyms and seed give the same views.

    ``keep``: words never replaced, deleted or inserted (an addition to EDA, ``cscl.augment.keep_identity_terms``):
    CS-InfoNCE assumes a view has its example's protected attribute, and a synonym source may turn "black" into
    "white" (embedding neighbours do) or delete the identity term."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"cscl.augment.alpha must be in [0, 1], got {alpha}")
    if n_aug < 1:
        raise ValueError(f"cscl.augment.n_aug must be at least 1, got {n_aug}")
    rng = random.Random(f"{seed}:{text}")
    words = clean(text).split()
    if not words:
        return [text] * n_aug
    n = max(1, int(alpha * len(words)))
    per = int(n_aug / 4) + 1
    out = []
    for _ in range(per):
        out.append(_synonym_replacement(words, n, synonyms, rng, keep))
        out.append(_random_insertion(words, n, synonyms, rng, keep))
        out.append(_random_swap(words, n, rng))
        out.append(_random_deletion(words, alpha, rng, keep))
    texts = [" ".join(w) for w in out]
    rng.shuffle(texts)
    return texts[:n_aug]


def synonym_source(kind: str, *, encoder_dir, wordnet_dir: str, neighbours: int):
    """The synonym function of ``cscl.augment.synonyms``: ``wordnet`` (database files in ``wordnet_dir``) or
    ``embedding`` (nearest whole-word tokens of the encoder in ``encoder_dir``)."""
    if kind == "wordnet":
        return WordNetSynonyms(wordnet_dir)
    if kind == "embedding":
        from transformers import AutoModel, AutoTokenizer

        model = AutoModel.from_pretrained(str(encoder_dir))
        weights = model.get_input_embeddings().weight.detach().float().numpy()
        return EmbeddingNeighbours(AutoTokenizer.from_pretrained(str(encoder_dir)), weights, k=neighbours)
    raise ValueError(f"unknown synonym source {kind!r}: use embedding or wordnet")


def views(texts: Sequence[str], synonyms, *, alpha: float, n_aug: int, seed: int,
          keep: Collection[str] = frozenset()) -> list[list[str]]:
    """:func:`eda` for every text (a progress bar on long lists)."""
    from ..runtime import progress

    return [eda(t, synonyms, alpha=alpha, n_aug=n_aug, seed=seed, keep=keep)
            for t in progress(list(texts), desc="EDA views")]
