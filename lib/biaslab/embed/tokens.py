"""What an encoder reads of each text: token counts and ids, from one call of the tokenizer's own fast backend.

Each missing text is tokenized once (:func:`read_tokens`): the counts that key the embedding store and plan the
batches and the ids the model reads come from one call of the tokenizer's fast backend, and a batch goes to the
model as those ids — not through ``SentenceTransformer.encode``, which tokenizes every batch again through the
transformers wrapper and resets the module tree's mode per call: 5 % of a bias card's time, measured, for the same
bits (the ids are checked against the model's own preprocessing on every call, and a model this path does not
cover — another tokenizer, a prompt, another modality — takes the ``encode`` path).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def token_lengths(model, texts: Sequence[str], chunk: int = 4096) -> np.ndarray:
    """Token count of each text after truncation, as a sentence-transformers model's own preprocessing gives it —
    ``chunk`` texts at a time, so memory holds one chunk's padded ids, not every text's (3 KB a text at 128
    tokens)."""
    texts = list(texts)
    return np.concatenate([np.asarray(model.preprocess(texts[s:s + chunk])["attention_mask"].sum(1))
                           for s in range(0, len(texts), chunk)] or [np.zeros(0, np.int64)])


def read_lengths(model, texts: Sequence[str]) -> np.ndarray:
    """How many tokens of each text ``model`` reads, counted with a limit one token above its ``max_seq_length``: a
    count above the length means the length cuts the text (the model reads ``max_seq_length`` tokens of it). The
    model's own counts where it has no length."""
    if model.max_seq_length is None:
        return token_lengths(model, texts)
    length = int(model.max_seq_length)
    model.max_seq_length = length + 1
    try:
        return token_lengths(model, texts)
    finally:
        model.max_seq_length = length


@dataclass(frozen=True)
class Read:
    """What a model reads of each text (:func:`read_tokens`): ``counts``, :func:`read_lengths`' counts (one above
    the model's length = cut; they key the store), ``lengths``, the tokens it reads (the batch plan), and where the
    direct path applies (:func:`direct_tokenizer`) ``ids`` and ``types``, each text's token and token-type ids as
    the model's own preprocessing gives them (None otherwise; ``types`` None too for a model without token types)."""

    counts: np.ndarray
    lengths: np.ndarray
    ids: list[np.ndarray] | None = None
    types: list[np.ndarray] | None = None


# tokenizer -> (its vocabulary size, its spec (tokenizer_spec), {length: its fast backend truncating at the length,
# unpadded — or None where the direct path does not apply}); weakly keyed, so a checkpoint's entry goes with its
# tokenizer, and made again once the vocabulary grows (add_tokens)
_TOKENIZERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
DIRECT_INPUTS = frozenset({"input_ids", "token_type_ids", "attention_mask"})
READ_CHUNK = 4096  # texts per tokenizer call: their encodings are dropped once their ids are kept


def direct_tokenizer(model, length: int):
    """A copy of ``model``'s fast tokenizer backend (the Rust ``tokenizers.Tokenizer`` its transformers tokenizer
    calls) truncating at ``length`` tokens as sentence-transformers' preprocessing does (longest first, the
    tokenizer's side, no stride) and padding nothing, or None where the direct path does not apply: not a
    text-only sentence-transformers model with a transformer first, a prompt it would prepend, no fast backend, or
    inputs other than ids, token types and the attention mask. One copy per tokenizer and length, made from the
    tokenizer's spec (:func:`tokenizer_spec`)."""
    tok = getattr(model, "tokenizer", None)
    entry = _tokenizer_entry(tok)
    if entry is None:  # no tokenizer, or one that cannot be weakly referenced
        return None
    spec, copies = entry[1:]
    if int(length) not in copies:
        backend = None
        first = next(iter(model), None) if hasattr(model, "__iter__") else None
        if (getattr(model, "default_prompt_name", None) is None and hasattr(tok, "backend_tokenizer")
                and set(getattr(first, "modality_config", None) or ()) == {"text"}
                and set(getattr(tok, "model_input_names", ())) <= DIRECT_INPUTS):
            from tokenizers import Tokenizer

            backend = Tokenizer.from_str(spec)
            backend.no_padding()
            backend.enable_truncation(max_length=int(length), stride=0, strategy="longest_first",
                                      direction=getattr(tok, "truncation_side", "right"))
        copies[int(length)] = backend
    return copies[int(length)]


def tokenizer_spec(tok) -> str | None:
    """What decides the ids a transformers tokenizer gives: its fast backend's serialisation (vocabulary, normaliser,
    pre-tokenizer, post-processor) with the truncation and padding state each call sets cleared, or its class and
    vocabulary where it has no fast backend; None without a tokenizer. Serialising takes ~80 ms, so it is kept per
    tokenizer until its vocabulary grows (``add_tokens``)."""
    if tok is None:
        return None
    entry = _tokenizer_entry(tok)
    return _spec(tok) if entry is None else entry[1]


def _tokenizer_entry(tok) -> tuple | None:
    """``tok``'s entry of ``_TOKENIZERS`` (made or made again), None for no tokenizer or one that cannot be weakly
    referenced."""
    if tok is None:
        return None
    try:
        entry = _TOKENIZERS.get(tok)
        if entry is None or entry[0] != len(tok):
            entry = _TOKENIZERS[tok] = (len(tok), _spec(tok), {})
    except TypeError:
        return None
    return entry


def _spec(tok) -> str:
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:
        return f"{type(tok).__name__}:{sorted(tok.get_vocab().items())}"
    parsed = json.loads(backend.to_str())
    parsed["truncation"] = parsed["padding"] = None
    return json.dumps(parsed, sort_keys=True)


def read_tokens(model, texts: Sequence[str], check: int = 4) -> Read:
    """:func:`read_lengths`' counts, the lengths the model reads, and each text's ids from one tokenization (the
    direct path: :func:`direct_tokenizer`, once at one token above the model's length for the counts, again at the
    length for the texts it cuts). Every call checks the ids of its first and its ``check`` longest texts against
    the model's own preprocessing and falls back to counts only (``ids`` None: the model tokenizes its batches
    itself) if they differ, as it does for a model the direct path does not cover or without a length."""
    texts = list(texts)
    length = model.max_seq_length
    above = direct_tokenizer(model, int(length) + 1) if length is not None else None
    if above is None or not texts:
        counts = read_lengths(model, texts)
        return Read(counts, batch_lengths(model, counts))
    at = direct_tokenizer(model, int(length))
    typed = "token_type_ids" in model.tokenizer.model_input_names  # token types kept only for a model that reads them
    counts, ids, types = [], [], []
    for s in range(0, len(texts), READ_CHUNK):  # an encoding holds tokens, offsets and masks: keep only the ids
        encs = above.encode_batch(texts[s:s + READ_CHUNK], add_special_tokens=True)
        counts += [len(e.ids) for e in encs]
        cut = [i for i, e in enumerate(encs) if len(e.ids) > int(length)]
        for i, e in zip(cut, at.encode_batch([texts[s + i] for i in cut], add_special_tokens=True), strict=True):
            encs[i] = e
        ids += [np.asarray(e.ids, np.int64) for e in encs]
        types += [np.asarray(e.type_ids, np.int64) for e in encs] if typed else []
    counts = np.asarray(counts, np.int64)
    read = Read(counts, batch_lengths(model, counts), ids, types if typed else None)
    sample = sorted({0, *np.argsort(-read.lengths, kind="stable")[:check].tolist()})
    ref = model.preprocess([texts[i] for i in sample])
    for row, i in enumerate(sample):
        n = int(ref["attention_mask"][row].sum())
        same = n == len(ids[i]) and np.array_equal(ref["input_ids"][row, :n].numpy(), ids[i])
        if typed:
            same = same and np.array_equal(ref["token_type_ids"][row, :n].numpy(), types[i])
        if not same:
            return Read(counts, read.lengths)
    return read


def read_inputs(read: Read, run: Sequence[int]) -> dict:
    """A model's input tensors (CPU) for the texts ``run`` of ``read`` (:func:`read_tokens` with ids), which have
    equal token counts (a batch of :func:`batch_plan`): their ids stacked, no padding, an all-ones attention mask,
    and the token-type ids for a model that reads them."""
    import torch

    ids = torch.from_numpy(np.stack([read.ids[i] for i in run]))
    out = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if read.types is not None:
        out["token_type_ids"] = torch.from_numpy(np.stack([read.types[i] for i in run]))
    return out


def batch_lengths(model, counts: np.ndarray) -> np.ndarray:
    """The token counts a batch plan needs (what the model reads) from :func:`read_lengths`' counts."""
    return counts if model.max_seq_length is None else np.minimum(counts, int(model.max_seq_length))
