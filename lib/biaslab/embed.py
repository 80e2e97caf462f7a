"""Batched sentence embedding with an on-disk cache: each text is embedded once per model.

The cache key is (model fingerprint, text). The fingerprint hashes the model's weights and the settings that change
its output (module configuration, normalisation), so a fine-tuned checkpoint never reuses its base model's vectors,
while a rerun with the same model costs nothing. The truncation length is in the key of the texts it cuts, not in
the fingerprint (:func:`cached`): a text that the model reads whole has one vector whatever ``max_seq_length`` it is
loaded with (the base encoder at 256 in ragfair's stages and at 128 in the bias cards share their BBQ and SEAT
vectors). Vectors live in one SQLite file per fingerprint under ``<cache>/embeddings/``. Texts are de-duplicated
before encoding, and misses are encoded in batches of texts with the *same* token count (:func:`length_batches`): no
text is ever padded, and a batch whose token rows make a matrix product that this machine's BLAS computes another
way is filled with copies of its own texts (:func:`filled`), so a text's vector does not depend on which other texts
were missing from the store when it was encoded. The BLAS picks its kernel by the number of rows, and where it picks
another one a row's result changes in the last bits. Which row counts do so depends on the CPU: on the first machine
this ran on, products of 1–3, 5–7 and 9–11 rows (a short text encoded alone got a vector up to 2.9e-7 away from its
vector in a larger batch — ``benchmarks/bench_batching.py``, measured before the filling); on an AVX-512 machine,
MiniLM's feed-forward output product (1,536 → 384) at 1–15 and 57–192 rows, a 768-wide encoder's (3,072 → 768) at
1–384. So it is measured on the machine, once, for the model's layer shapes (:func:`row_independent`), and a batch
is filled to the fewest row-independent rows: on the AVX-512 machine the same bits as a fixed 256 rows, with fewer
extra rows (2,000 sentences +2 % vs +4 %, 172 questions +16 % vs +79 %). (Padding changes the floating-point
summation order too: a padded text's vector differed from its unpadded one by up to 1.1e-7, measured, and the store
keeps the first vector it gets — so stages used to write other bytes on a cold store than on a warm one.)
Equal-length batches are also faster than sorted padded ones (1,268 GenderBias-QA passages: 21.0 s vs 22.2 s;
measured), and a batch holds at most ``MAX_BATCH_TOKENS`` tokens (long texts: 32 a batch, a few per cent faster than
64 here, the same bytes). The fingerprint includes the batching scheme (``ENCODING``), so vectors stored under an
earlier one (padded; unfilled, before 2026-11-26; filled to a fixed row count, session 26) are not reused.

Each missing text is tokenized once (:func:`read_tokens`): the counts that key the store and plan the batches and
the ids the model reads come from one call of the tokenizer's own fast backend, and a batch goes to the model as
those ids — not through ``SentenceTransformer.encode``, which tokenizes every batch again through the transformers
wrapper and resets the module tree's mode per call: 5 % of a bias card's time, measured, for the same bits (the ids
are checked against the model's own preprocessing on every call, and a model this path does not cover — another
tokenizer, a prompt, another modality — takes the ``encode`` path).

With ``BIASLAB_EMBED_STATS=FILE`` set (the runner sets it when timings are logged), every ``encode`` call appends
one JSON line — model, texts asked for, distinct texts, cache hits — so a stage's cache hit rate can be reported
(``biaslab timings``; :mod:`biaslab.usage`). Nothing is written otherwise.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
import sqlite3
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .paths import cache_dir
from .usage import record_usage

# A batch's matrix products see batch x tokens rows, and the BLAS picks its kernel by the number of rows: where it
# picks another one, a row's result changes in the last bits (module doc). Which row counts do so depends on the CPU
# (one machine: 1-3, 5-7, 9-11; an AVX-512 one, for MiniLM: 1-15 and 57-192), so it is measured on the machine
# (row_independent): products of 1 to PROBE_ROWS rows against one of BIG_ROWS rows, for each linear layer shape of
# the model; above PROBE_ROWS a product is taken as row-independent (a unit test checks MiniLM's shapes up to
# BIG_ROWS). A batch is filled with copies of its own texts to the fewest rows that are row-independent (filled).
PROBE_ROWS = 512
BIG_ROWS = 4096
# How vectors are computed; part of the fingerprint (module doc), so a store's vectors computed another way are not
# reused. The token cap below changes no bytes (measured) and is not part of it.
ENCODING = "unpadded-length-batches;filled-to-row-independent-products"
MAX_BATCH_TOKENS = 4096  # at most this many tokens (rows) a batch: long texts 32 a batch (benchmarks/bench_batching.py)


def length_batches(lengths: Sequence[int], batch_size: int, max_tokens: int | None = None) -> list[np.ndarray]:
    """Indices grouped into batches of equal token count, at most ``batch_size`` each (and at most ``max_tokens``
    tokens, never fewer than one text), longest first and in input order within a length (deterministic): a batch
    never pads (module doc)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.lexsort((np.arange(len(lengths)), -lengths))
    cuts = np.flatnonzero(np.diff(lengths[order])) + 1
    out = []
    for group in np.split(order, cuts):
        if not len(group):
            continue
        size = batch_size if max_tokens is None else max(1, min(batch_size, max_tokens // max(int(lengths[group[0]]), 1)))
        out += np.array_split(group, -(-len(group) // size))
    return out


def linear_shapes(model) -> tuple[tuple[int, int], ...]:
    """The (out, in) shapes of a model's linear layers: the matrix products whose rows a batch sets."""
    import torch

    return tuple(sorted({tuple(m.weight.shape) for m in model.modules() if isinstance(m, torch.nn.Linear)}))


_ROW_INDEPENDENT: dict[str, np.ndarray] = {}


@functools.cache
def _cpu() -> tuple[str, ...]:
    cpu = [platform.machine(), platform.processor()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            lines = f.read().split("\n\n", 1)[0].splitlines()
        cpu += [ln for ln in lines if ln.startswith(("model name", "flags"))]
    except OSError:
        pass
    return tuple(cpu)


def _machine() -> list[str]:
    """What decides the BLAS's kernels: the CPU (model and instruction-set flags), torch and its thread count."""
    import torch

    return [*_cpu(), torch.__version__, str(torch.get_num_threads())]


def row_independent(shapes: Sequence[tuple[int, int]], device: str) -> np.ndarray:
    """``safe[r]`` for r = 0 … ``PROBE_ROWS``: whether a product of r rows gives every row the bits that a product of
    ``BIG_ROWS`` rows gives it, for every (out, in) shape in ``shapes`` on ``device`` — measured on random matrices
    once per machine (1.9 s for MiniLM's three shapes here) and kept under ``<cache>/blas/``."""
    what = {"machine": _machine(), "device": str(device), "shapes": [list(s) for s in shapes]}
    key = hashlib.sha256(json.dumps(list(what.values())).encode()).hexdigest()[:24]
    if key in _ROW_INDEPENDENT:
        return _ROW_INDEPENDENT[key]
    path = cache_dir() / "blas" / f"{key}.json"
    try:
        safe = np.array(json.loads(path.read_text())["row_independent"], dtype=bool)
    except (OSError, ValueError, KeyError):
        safe = np.zeros(0, bool)
    if len(safe) != PROBE_ROWS + 1:
        from .io import write_json

        safe = _probe_rows(shapes, device)
        write_json(path, {**what, "big_rows": BIG_ROWS, "row_independent": safe.tolist()})
    _ROW_INDEPENDENT[key] = safe
    return safe


def model_row_independent(model) -> np.ndarray:
    """:func:`row_independent` for a loaded model: its linear layer shapes, on its device."""
    return row_independent(linear_shapes(model), str(model.device))


def _probe_rows(shapes: Sequence[tuple[int, int]], device: str) -> np.ndarray:
    import torch
    import torch.nn.functional as F

    safe = np.ones(PROBE_ROWS + 1, bool)
    safe[0] = False
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for out_dim, in_dim in shapes:
            x, w, b = (torch.randn(*size, generator=gen).to(device)
                       for size in ((BIG_ROWS, in_dim), (out_dim, in_dim), (out_dim,)))
            big = F.linear(x, w, b)
            for r in np.flatnonzero(safe):
                safe[r] = torch.equal(F.linear(x[:r], w, b), big[:r])
    return safe


def filled(idx: np.ndarray, length: int, safe: np.ndarray) -> np.ndarray:
    """``idx`` (a batch of texts of ``length`` tokens each) repeated to the fewest texts whose token rows form a
    row-independent product (``safe``, from :func:`row_independent`; more than ``PROBE_ROWS`` rows count as such);
    its first ``len(idx)`` entries are ``idx``. Encode the filled batch, keep the first ``len(idx)`` results: a text's
    vector is then the one any large batch gives it (module doc)."""
    length, k = max(int(length), 1), len(idx)
    while k * length <= PROBE_ROWS and not safe[k * length]:
        k += 1
    return idx if k == len(idx) else np.resize(idx, k)


def batch_plan(lengths: Sequence[int], batch_size: int, safe: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """How the library encodes texts of these token ``lengths``: (batch, filled batch) index pairs — equal token
    counts, at most ``batch_size`` texts and ``MAX_BATCH_TOKENS`` tokens (:func:`length_batches`), each filled to a
    row-independent product (:func:`filled`, ``safe`` from :func:`row_independent`). Encode the filled batch and keep
    its first ``len(batch)`` results. The one recipe for sentence vectors, layer states and the shared frozen bottom
    (:mod:`biaslab.frozen`)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return [(idx, filled(idx, lengths[idx[0]], safe))
            for idx in length_batches(lengths, batch_size, MAX_BATCH_TOKENS)]


def token_lengths(model, texts: Sequence[str], chunk: int = 4096) -> np.ndarray:
    """Token count of each text after truncation, as a sentence-transformers model's own preprocessing gives it —
    ``chunk`` texts at a time, so memory holds one chunk's padded ids, not every text's (3 KB a text at 128
    tokens)."""
    texts = list(texts)
    return np.concatenate([np.asarray(model.preprocess(texts[s:s + chunk])["attention_mask"].sum(1))
                           for s in range(0, len(texts), chunk)] or [np.zeros(0, np.int64)])


def fingerprint(model, *, normalize: bool = True, scheme: str | None = None, truncation: bool = True) -> str:
    """Content hash of a ``SentenceTransformer`` (weights + output-relevant settings) and of how its outputs are
    computed: ``scheme``, the embedding store's ``ENCODING`` unless a caller that computes something else (the RAG
    reader's option scores) names its own, so a change to the batching does not invalidate what it caches. With
    ``truncation=False`` the model's ``max_seq_length`` is left out: the embedding store keys the texts that a
    length cuts by that length instead (:func:`cached`)."""
    h = hashlib.sha256()
    stack = repr(model)  # module stack with pooling and normalisation settings
    if not truncation:
        stack = re.sub(r"'max_seq_length': \w+", "'max_seq_length': *", stack)
    h.update(stack.encode())
    scheme = ENCODING if scheme is None else scheme
    cut = getattr(model, "max_seq_length", None) if truncation else "*"
    h.update(f"max_seq_length={cut};normalize={normalize};{scheme}".encode())
    for key, tensor in sorted(model.state_dict().items()):
        h.update(key.encode())
        h.update(str(tuple(tensor.shape)).encode())
        h.update(tensor.detach().to("cpu").contiguous().numpy().tobytes())
    return h.hexdigest()


def _text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _cut_key(text: str, length) -> bytes:
    return _text_key(f"{text}\x00max_seq_length={length}")


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


def cached(db: EmbeddingCache, model, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """The stored vectors of ``texts`` for ``model`` (text -> vector) and the texts not stored. A vector depends on
    the weights and on the tokens the model reads, not on its ``max_seq_length`` setting (equal-length batches, no
    padding: module doc), so a text the model reads whole is stored under its own hash with its token count, and a
    hit is used whenever the count fits the model's length — the same weights loaded at another length (the base
    encoder at 256 in ragfair's stages and at 128 in the bias cards) share it — while a text that a length cuts is
    stored under its hash with that length. Only the misses are tokenized (:func:`store`)."""
    length = model.max_seq_length
    whole = [_text_key(t) for t in texts]  # each key hashed once: this runs on every encode call
    found = db.get(whole)
    out, rest = {}, []
    for t, k in zip(texts, whole, strict=True):
        hit = found.get(k)
        if hit is not None and length is not None and hit[0] <= length:
            out[t] = hit[1]
        else:
            rest.append(t)
    if rest:
        cut = [_cut_key(t, length) for t in rest]
        found = db.get(cut)
        out.update((t, found[k][1]) for t, k in zip(rest, cut, strict=True) if k in found)
    return out, [t for t in texts if t not in out]


def store(db: EmbeddingCache, model, texts: Sequence[str], vectors: np.ndarray, counts: np.ndarray) -> None:
    """Keep the vectors of ``texts`` (just encoded by ``model``; ``counts`` from :func:`read_lengths`) under the keys
    :func:`cached` looks for."""
    length = model.max_seq_length
    if length is None:  # no length of its own: nothing is shared across lengths
        keys = [_cut_key(t, None) for t in texts]
    else:
        keys = [_text_key(t) if c <= length else _cut_key(t, length) for t, c in zip(texts, counts, strict=True)]
    db.put(keys, counts, vectors)


class EmbeddingCache:
    """SQLite store of float32 vectors keyed by text hash, each with the token count it was computed from (see
    :func:`cached`), one file per model fingerprint."""

    def __init__(self, model_fp: str, root: Path | None = None, kind: str = ""):
        folder = (root or cache_dir()) / "embeddings"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{model_fp[:32]}{'-' + kind if kind else ''}.sqlite"
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (k BLOB PRIMARY KEY, n INTEGER NOT NULL, v BLOB NOT NULL)")

    def get(self, keys: list[bytes]) -> dict[bytes, tuple[int, np.ndarray]]:
        found: dict[bytes, tuple[int, np.ndarray]] = {}
        for i in range(0, len(keys), 900):  # SQLite's bound-parameter limit
            chunk = keys[i : i + 900]
            rows = self._db.execute(
                f"SELECT k, n, v FROM vec WHERE k IN ({','.join('?' * len(chunk))})", chunk).fetchall()
            found.update((k, (n, np.frombuffer(v, dtype=np.float32))) for k, n, v in rows)
        return found

    def put(self, keys: list[bytes], counts: Sequence[int], vectors: np.ndarray) -> None:
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vec VALUES (?, ?, ?)",
                                 zip(keys, (int(c) for c in counts),
                                     (np.ascontiguousarray(v, dtype=np.float32).tobytes() for v in vectors),
                                     strict=True))

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM vec").fetchone()[0]

    def close(self) -> None:
        self._db.close()


class Encoder:
    """Embed texts with a sentence-transformers model, batched, cached, on the best device.

    ``model`` is a folder with weights (a logical name resolved by ``models.preflight``, or a model trained by a
    stage) or a loaded ``SentenceTransformer``; ``device`` applies when loading from a folder. ``encode`` returns
    float32 vectors in input order (L2-normalised when ``normalize``). ``cache`` switches the embedding cache (on
    in every stage; tests switch it off to measure the model itself)."""

    def __init__(self, model, *, device: str, batch_size: int, normalize: bool = True, cache: bool = True,
                 cache_root: Path | None = None):
        if isinstance(model, (str, Path)):
            from .models import load_sentence_transformer

            self.name = Path(model).name
            model = load_sentence_transformer(model, device)
        else:
            self.name = getattr(model, "name_or_path", type(model).__name__)
        self.model = model
        self.batch_size = batch_size
        self.normalize = normalize
        self.fingerprint = fingerprint(model, normalize=normalize, truncation=False)  # lengths: in the keys
        self.cache_root = cache_root
        self.cache = EmbeddingCache(self.fingerprint, cache_root) if cache else None

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def _token_lengths(self, texts: list[str], chunk: int = 4096) -> np.ndarray:
        return token_lengths(self.model, texts, chunk)

    def _batches(self, texts: list[str], show_progress: bool | None, desc: str, read: Read | None = None):
        """(batch, filled batch) pairs: equal token counts, at most ``batch_size`` texts and ``MAX_BATCH_TOKENS``
        tokens, each filled to a row-independent product (module doc). ``read``: :func:`read_tokens` of ``texts``
        when the caller has it."""
        from .runtime import progress

        read = read_tokens(self.model, texts) if read is None else read
        plan = batch_plan(read.lengths, self.batch_size, model_row_independent(self.model))
        yield from progress(plan, desc=desc, unit="batch", disable=not show_progress or len(plan) <= 1)

    def _inputs(self, run: np.ndarray, read: Read) -> dict:
        """:func:`read_inputs` on the model's device."""
        return {k: v.to(self.model.device) for k, v in read_inputs(read, run).items()}

    def _encode(self, texts: list[str], show_progress: bool | None, read: Read | None = None) -> np.ndarray:
        """Vectors of ``texts`` (``read``: :func:`read_tokens` of them, when the caller has it). With ids, each
        batch goes to the model as they are, as ``SentenceTransformer.encode`` would run it (eval mode, inference
        mode, the same normalisation); without, through ``encode``."""
        import torch

        read = read_tokens(self.model, texts) if read is None else read
        out = np.zeros((len(texts), self.dim), np.float32)
        batches = self._batches(texts, show_progress, "encode", read)
        if read.ids is None:
            for idx, run in batches:
                out[idx] = self.model.encode([texts[i] for i in run], batch_size=len(run), convert_to_numpy=True,
                                             normalize_embeddings=self.normalize, show_progress_bar=False)[: len(idx)]
            return out
        self.model.eval()  # as encode leaves it
        with torch.inference_mode():
            for idx, run in batches:
                vec = self.model({**self._inputs(run, read), "modality": "text"})["sentence_embedding"]
                if self.normalize:
                    vec = torch.nn.functional.normalize(vec, p=2, dim=1)
                out[idx] = vec[: len(idx)].float().cpu().numpy()
        return out

    def encode(self, texts: Sequence[str], *, show_progress: bool | None = None) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        if self.cache is None:
            table = dict(zip(unique, self._encode(unique, show_progress), strict=False))
            return np.stack([table[t] for t in texts])
        hits, missing = cached(self.cache, self.model, unique)
        record_usage(self.name, "pooled", len(texts), len(unique), len(unique) - len(missing))
        if missing:  # tokenized once: for the store's keys, the batch plan and the model's inputs
            read = read_tokens(self.model, missing)
            vecs = self._encode(missing, show_progress, read)
            store(self.cache, self.model, missing, vecs, read.counts)
            hits.update(zip(missing, vecs, strict=True))
        return np.stack([hits[t] for t in texts])

    @property
    def n_layers(self) -> int:
        """Hidden states the transformer returns: the embedding layer plus one per transformer layer."""
        return int(self.model[0].auto_model.config.num_hidden_layers) + 1

    def _encode_layers(self, texts: list[str], read: Read | None = None) -> np.ndarray:
        import torch

        read = read_tokens(self.model, texts) if read is None else read
        first = self.model[0]
        tok, net = first.tokenizer, first.auto_model
        device = next(net.parameters()).device
        out = np.zeros((len(texts), self.n_layers, self.dim), np.float32)
        was_training = net.training
        net.eval()
        with torch.inference_mode():
            # equal lengths: no padding (module doc)
            for idx, run in self._batches(texts, False, "encode layers", read):
                if read.ids is None:
                    enc = tok([texts[i] for i in run], padding=True, truncation=True,
                              max_length=self.model.max_seq_length, return_tensors="pt").to(device)
                else:
                    enc = self._inputs(run, read)
                hidden = torch.stack(net(**enc, output_hidden_states=True).hidden_states, 1)  # [b, L+1, t, d]
                mask = enc["attention_mask"][:, None, :, None].to(hidden.dtype)
                pooled = (hidden * mask).sum(2) / mask.sum(2).clamp(min=1.0)
                out[idx] = pooled[: len(idx)].float().cpu().numpy()
        net.train(was_training)
        return out

    def encode_layers(self, texts: Sequence[str]) -> np.ndarray:
        """Mean-pooled hidden states of every layer, ``[n_texts, n_layers, dim]`` (not normalised; index 0 is the
        embedding layer). Probing (ragfair §3.2.2) reads these; cached like :meth:`encode`, under a separate key."""
        texts = [str(t) for t in texts]
        shape = (self.n_layers, self.dim)
        if not texts:
            return np.zeros((0, *shape), np.float32)
        unique = list(dict.fromkeys(texts))
        if self.cache is None:
            table = dict(zip(unique, self._encode_layers(unique), strict=True))
            return np.stack([table[t] for t in texts])
        if not hasattr(self, "_layer_cache"):
            self._layer_cache = EmbeddingCache(self.fingerprint, self.cache_root, kind="layers")
        hits, missing = cached(self._layer_cache, self.model, unique)
        record_usage(self.name, "layers", len(texts), len(unique), len(unique) - len(missing))
        if missing:
            read = read_tokens(self.model, missing)
            vecs = self._encode_layers(missing, read)
            store(self._layer_cache, self.model, missing, vecs.reshape(len(missing), -1), read.counts)
            hits.update((t, v.reshape(-1)) for t, v in zip(missing, vecs, strict=True))
        return np.stack([hits[t].reshape(shape) for t in texts])
