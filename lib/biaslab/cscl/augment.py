"""Views for the contrastive objectives (cscl App. B.3).

* :func:`eda` — Easy Data Augmentation (Wei & Zou 2019), the four operations of the authors' ``eda.py`` with the
  paper's ratio α = 0.1 and four augmented examples per example: synonym replacement, random insertion (of a
  synonym), random swap, random deletion; text first reduced to lower-case letters and spaces, as theirs is.
* Synonyms: :class:`WordNetSynonyms` reads WordNet 3.0's database files (``index.*`` / ``data.*``; on Debian the
  ``wordnet-base`` package, /usr/share/wordnet) — the source EDA uses through NLTK; no PyPI package ships WordNet.
  Offline default where WordNet is absent: :class:`EmbeddingNeighbours`, the nearest whole-word tokens of the
  encoder's own input-embedding matrix (word-embedding substitution, Wang & Yang 2015, as nlpaug's WordEmbsAug) —
  a documented substitute: neighbours are related words, not always synonyms.

* :func:`clm` — the paper's "CLM substitute" and "CLM insert" (Kobayashi 2018, nlpaug's ``ContextualWordEmbsAug``
  with RoBERTa-base at rate 0.1): a word is replaced by, or a word inserted from, a language model's prediction for
  that place, sampled from its top-k whole words by probability (nlpaug: top_k 100, temperature 1). RoBERTa-base is
  not obtainable here; the offline substitute is the registry's causal LM (SmolLM2-135M) through
  :class:`NextWords`, which predicts a place from its **left context only** (a masked LM also sees the right) and
  from the original sentence (every place of a view is predicted in one forward pass, not after the view's earlier
  edits). Only single-token whole words are proposed.
* Visible places only (``cscl.augment.visible_only``): the encoder reads a view's first ``max_length`` tokens, and
  every word is at least one token, so a word at index ``max_length`` or later is never seen. Insertions only push
  words to later indices, so an edit at place g ≥ ``max_length`` cannot change what the encoder sees. With
  ``visible_words`` set, the LM predicts places 1 … ``visible_words`` − 1 only, from a forward pass that stops
  there; a place beyond can still be drawn, and then makes the same weighted ``choices`` call that sampling its word
  makes (on a one-word stand-in), so the random stream stays in step, but no word is written. The first
  ``visible_words`` words of every view — all the encoder sees — are then those of the full computation (tested),
  as long as every place's candidate pool is non-empty, which holds when fewer than ``top_k`` − 1 words are kept
  (checked; otherwise every place is predicted). Only the unseen tail of a view's text differs. On cscl's
  GenderBias-QA passages the sensitivity stage's results came out byte-identical, the stage 223 s instead of 285 s
  (README, cscl).

* Counterfactual views (``cscl.augment.swap_identity_terms``, beyond the paper; a diagnostic, docs/cscl.md): after
  the augmentation every identity term of a view becomes its counterpart (:func:`replace_words`, he ↔ she, black ↔
  white, ... from :func:`biaslab.cscl.terms.counterparts`), so the two views of an example disagree on every
  gendered word they carry. CS-InfoNCE's assumption that a view keeps its example's a no longer holds for the words.
  With ``cscl.augment.mask_proper_nouns`` every word only ever written capitalised in the texts (the subjects' names
  among them) becomes "someone" in every view, so the two views share no name either (the replacements:
  :func:`biaslab.cscl.terms.view_edits`).

Back-translation (wmt19-en-de and back) has no offline substitute here: no translation model ships in a package,
and the registry's only generator (SmolLM2-135M) is poor at faithful rewriting — a paraphrase from it would change
the label or the group of too many views for CS-InfoNCE's assumption (a view keeps its example's y and a).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import cache
from pathlib import Path

import numpy as np

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
        vocab = tokenizer.get_vocab()
        self.words = [w for w, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
        emb = np.asarray(embeddings, dtype=np.float32)
        self.emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        self.ok = np.array([bool(re.fullmatch(r"[a-z]{2,}", w)) and w not in STOP_WORDS for w in self.words])
        self.ids = vocab
        self.k = k

    @cache  # noqa: B019
    def __call__(self, word: str) -> list[str]:
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

def _start(text: str, *, alpha: float, n_aug: int, salt: str) -> tuple[random.Random, list[str], int]:
    """What every augmentation starts with: its arguments checked, a generator seeded by ``salt`` and the text, the
    text's cleaned words and the number of edits (``max(1, int(alpha · words))``)."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"cscl.augment.alpha must be in [0, 1], got {alpha}")
    if n_aug < 1:
        raise ValueError(f"cscl.augment.n_aug must be at least 1, got {n_aug}")
    words = clean(text).split()
    return random.Random(f"{salt}{text}"), words, max(1, int(alpha * len(words)))


def eda(text: str, synonyms: Callable[[str], Sequence[str]], *, alpha: float, n_aug: int, seed: int,
        keep: Collection[str] = frozenset()) -> list[str]:
    """``n_aug`` augmented copies of ``text`` (Wei & Zou's ``eda`` with α_sr = α_ri = α_rs = p_rd = ``alpha``):
    each operation makes ``int(n_aug / 4) + 1`` candidates, shuffled and cut to ``n_aug``. Seeded per call: the
    same text, synonyms and seed give the same views.

    ``keep``: words never replaced, deleted or inserted (an addition to EDA, ``cscl.augment.keep_identity_terms``):
    CS-InfoNCE assumes a view has its example's protected attribute, and a synonym source may turn "black" into
    "white" (embedding neighbours do) or delete the identity term."""
    rng, words, n = _start(text, alpha=alpha, n_aug=n_aug, salt=f"{seed}:")
    if not words:
        return [text] * n_aug
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

LM_METHODS = ("clm_substitute", "clm_insert")
METHODS = ("eda", *LM_METHODS)

class NextWords:
    """A causal LM's whole-word predictions for every place of a sentence from its left context: for words
    w_0 … w_{L-1}, place g (1 ≤ g ≤ L) is "after w_0 … w_{g-1}" — where w_g would be substituted or a word
    inserted. Per place, the ``top_k`` most likely next tokens that are a space and a lower-case word of two or more
    letters (not a stop word), with their probabilities renormalised over those ``top_k``; one forward pass per
    sentence, sentences batched by length, each sentence predicted once per instance (substitute and insert views
    share the pass). Places beyond ``max_tokens`` tokens get none; with ``places`` set, the places after the first
    ``places`` are counted but not predicted (candidates ``None``, probabilities NaN; module doc, visible places)."""

    def __init__(self, lm_dir, *, top_k: int, batch_size: int, device: str, max_tokens: int = 128):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ..runtime import select_device

        if top_k < 1:
            raise ValueError(f"cscl.augment.top_k must be at least 1, got {top_k}")
        self.torch, self.top_k, self.batch_size, self.max_tokens = torch, top_k, batch_size, max_tokens
        self.device = select_device(device)
        self.tok = AutoTokenizer.from_pretrained(str(lm_dir))
        self.model = AutoModelForCausalLM.from_pretrained(str(lm_dir), dtype=torch.float32).eval().to(self.device)
        n_vocab = self.model.get_output_embeddings().weight.shape[0]
        pieces = self.tok.convert_ids_to_tokens(list(range(min(n_vocab, len(self.tok)))))
        strings = [self.tok.convert_tokens_to_string([p]) if p is not None else "" for p in pieces]
        self.vocab = [s[1:] for s in strings] + [""] * (n_vocab - len(strings))
        ok = np.array([s.startswith(" ") and bool(re.fullmatch(r"[a-z]{2,}", s[1:])) and s[1:] not in STOP_WORDS
                       for s in strings] + [False] * (n_vocab - len(strings)))
        if ok.sum() < top_k:
            raise ValueError(f"{lm_dir}: its vocabulary has {ok.sum()} whole-word tokens, fewer than top_k {top_k}")
        self.bias = torch.where(torch.from_numpy(ok), 0.0, float("-inf")).to(self.device)
        self.pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id or 0
        self._ids: dict[str, list[int]] = {}
        self._memo: dict[tuple, tuple[list, np.ndarray]] = {}  # both clm methods share a pass

    def _word_ids(self, word: str, first: bool) -> list[int]:
        key = word if first else " " + word
        if key not in self._ids:
            self._ids[key] = self.tok(key, add_special_tokens=False)["input_ids"]
        return self._ids[key]

    def __call__(self, sentences: Sequence[Sequence[str]], *,
                 places: int | None = None) -> list[tuple[list[list[str] | None], np.ndarray]]:
        """Per sentence (a list of words): (candidate words per place, their probabilities [places, top_k]); with
        ``places``, only the first ``places`` places are predicted, the rest are ``None`` / NaN."""
        torch = self.torch
        from ..runtime import progress

        if places is not None and places < 0:
            raise ValueError(f"places must be at least 0, got {places}")
        keys = [(tuple(w), places) for w in sentences]  # the memo's key: the words and how many places are predicted
        todo = list(dict.fromkeys(k for k in keys if k not in self._memo))
        seqs, ends, counts = [], [], []
        for words, _ in todo:
            ids, end = [], []
            for j, w in enumerate(words):
                piece = self._word_ids(w, j == 0)
                if len(ids) + len(piece) > self.max_tokens:
                    break
                ids += piece
                end.append(len(ids) - 1)
            counts.append(len(end))
            if places is not None:
                end = end[:places]
                ids = ids[: end[-1] + 1] if end else []  # causal: the states up to a place ignore what follows
            seqs.append(ids)
            ends.append(end)
        out: list = [None] * len(seqs)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        with torch.inference_mode():
            for batch in progress(batches, desc="LM predictions"):
                width = max(1, *(len(seqs[i]) for i in batch))
                ids = torch.full((len(batch), width), self.pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for r, i in enumerate(batch):
                    ids[r, :len(seqs[i])] = torch.tensor(seqs[i], dtype=torch.long)
                    mask[r, :len(seqs[i])] = 1
                # the decoder once, the vocabulary projection only where a word ends (a sixth of the compute)
                hidden = self.model.base_model(input_ids=ids.to(self.device),
                                               attention_mask=mask.to(self.device)).last_hidden_state
                for r, i in enumerate(batch):
                    cands, probs = [], np.zeros((0, self.top_k), np.float32)
                    if ends[i]:
                        logits = self.model.get_output_embeddings()(hidden[r, ends[i]]).float()
                        top = (logits + self.bias).topk(self.top_k, dim=-1)
                        probs = top.values.softmax(dim=-1).cpu().numpy()
                        cands = [[self.vocab[t] for t in row] for row in top.indices.cpu().tolist()]
                    unseen = counts[i] - len(cands)  # counted, not predicted (places)
                    out[i] = (cands + [None] * unseen,
                              np.concatenate([probs, np.full((unseen, self.top_k), np.nan, np.float32)]))
        self._memo.update(zip(todo, out, strict=True))
        return [self._memo[k] for k in keys]

def clm(text: str, candidates: Sequence[Sequence[str]], probs: np.ndarray, *, action: str, alpha: float, n_aug: int,
        seed: int, keep: Collection[str] = frozenset()) -> list[str]:
    """``n_aug`` views of ``text`` by contextual-LM substitution or insertion (nlpaug's ``ContextualWordEmbsAug``,
    ``action`` ``substitute`` / ``insert``, ``aug_p`` = ``alpha``): per view, ``max(1, int(alpha · L))`` places of the
    L words (text cleaned as EDA's) drawn at random; at each, a word sampled by probability from that place's
    candidates (:class:`NextWords`; place g = after the first g words), never the word it replaces, never a word in
    ``keep``, and ``keep`` words are never replaced. Substitution skips stop words and the first word (no left
    context). Seeded per call. A place whose candidates are ``None`` (not predicted: beyond what the encoder sees,
    module doc) takes its random draw and is left as it is."""
    if action not in ("substitute", "insert"):
        raise ValueError(f"action must be substitute or insert, got {action!r}")
    rng, words, n = _start(text, alpha=alpha, n_aug=n_aug, salt=f"{seed}:{action}:")
    if not words:
        return [text] * n_aug
    places = len(candidates)  # place g uses candidates[g - 1]
    if action == "substitute":
        eligible = [i for i in range(1, min(len(words), places + 1)) if words[i] not in STOP_WORDS
                    and words[i] not in keep]
    else:
        eligible = list(range(1, min(len(words), places) + 1))
    out = []
    for _ in range(n_aug):
        new = list(words)
        for i in sorted(rng.sample(eligible, min(n, len(eligible))), reverse=True):
            if candidates[i - 1] is None:  # a place the encoder never sees (module doc): the draw, not the word —
                rng.choices([words[i - 1]], weights=[1.0])  # the same call as below, so the stream stays in step
                continue
            pool = [(w, float(p)) for w, p in zip(candidates[i - 1], probs[i - 1], strict=True)
                    if w not in keep and (action == "insert" or w != words[i])]
            if not pool:
                continue
            choice = rng.choices([w for w, _ in pool], weights=[p for _, p in pool])[0]
            if action == "substitute":
                new[i] = choice
            else:
                new.insert(i, choice)
        out.append(" ".join(new))
    return out


def replace_words(text: str, edits: Mapping[str, str]) -> str:
    """``text`` with every whole word found in ``edits`` (lower-case word → replacement, e.g. a counterpart) replaced,
    in the word's case (He → She, HIS → HER); other words and all punctuation unchanged."""
    def sub(m: re.Match) -> str:
        w = m.group(0)
        new = edits.get(w.lower())
        if new is None:
            return w
        return new.upper() if w.isupper() else new.capitalize() if w[0].isupper() else new

    return re.sub(r"[A-Za-z]+", sub, text)


def views(texts: Sequence[str], method: str, *, alpha: float, n_aug: int, seed: int,
          keep: Collection[str] = frozenset(), edits: Mapping[str, str] | None = None,
          synonym_fn: Callable[[str], Sequence[str]] | None = None, next_words: NextWords | None = None,
          visible_words: int | None = None) -> list[list[str]]:
    """``n_aug`` augmented copies of every text by ``method`` (``cscl.augment.strategy``): ``eda`` (needs ``synonym_fn``,
    see :func:`synonym_source`), ``clm_substitute`` / ``clm_insert`` (need ``next_words``, a :class:`NextWords`).
    ``visible_words``: the CLM methods predict only the places an encoder reading that many tokens can see (module
    doc; ``None``: every place); the views' first ``visible_words`` words are the same either way. ``edits``: word →
    replacement, applied to every view after its augmentation (:func:`replace_words`; the identity terms'
    counterparts and masked proper nouns of :func:`biaslab.cscl.terms.view_edits`)."""
    out = _views(list(texts), method, alpha=alpha, n_aug=n_aug, seed=seed, keep=keep, synonym_fn=synonym_fn,
                 next_words=next_words, visible_words=visible_words)
    return out if edits is None else [[replace_words(v, edits) for v in vs] for vs in out]


def _views(texts, method, *, alpha, n_aug, seed, keep, synonym_fn, next_words, visible_words) -> list[list[str]]:
    from ..runtime import progress

    if method == "eda":
        if synonym_fn is None:
            raise ValueError("EDA views need a synonym source (cscl.augment.synonyms)")
        return [eda(t, synonym_fn, alpha=alpha, n_aug=n_aug, seed=seed, keep=keep)
                for t in progress(texts, desc="EDA views")]
    if method in LM_METHODS:
        if next_words is None:
            raise ValueError(f"{method} views need a language model (cscl.augment.lm)")
        if visible_words is not None and visible_words < 1:
            raise ValueError(f"visible_words must be at least 1 (the encoder's max_length), got {visible_words}")
        # a place beyond the visible words is skipped only if its pool could not have been empty (module doc)
        places = None if visible_words is None or len(keep) + 1 >= next_words.top_k else visible_words - 1
        preds = next_words([clean(t).split() for t in texts], places=places)
        action = method.removeprefix("clm_")
        return [clm(t, c, p, action=action, alpha=alpha, n_aug=n_aug, seed=seed, keep=keep)
                for t, (c, p) in zip(texts, preds, strict=True)]
    raise ValueError(f"unknown augmentation {method!r}: use one of {', '.join(METHODS)}")
