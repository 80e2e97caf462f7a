"""How texts are batched for an encoder so that a text's vector never depends on the texts batched with it.

Texts are encoded in batches of the *same* token count (:func:`length_batches`): no text is ever padded, and a batch
whose token rows make a matrix product that this machine's BLAS computes another way is filled with copies of its
own texts (:func:`filled`). The BLAS picks its kernel by the number of rows, and where it picks another one a row's
result changes in the last bits. Which row counts do so depends on the CPU: on one machine, products of 1–3, 5–7
and 9–11 rows (a short text encoded alone got a vector up to 2.9e-7 away from its vector in a larger batch —
``benchmarks/bench_batching.py``, measured before the filling); on an AVX-512 machine, MiniLM's feed-forward output
product (1,536 → 384) at 1–15 and 57–192 rows, a 768-wide encoder's (3,072 → 768) at 1–384. So it is measured on
the machine, once, for the model's layer shapes (:func:`row_independent`), and a batch is filled to the fewest
row-independent rows: on the AVX-512 machine the same bits as a fixed 256 rows, with fewer extra rows (2,000
sentences +2 % vs +4 %, 172 questions +16 % vs +79 %). (Padding changes the floating-point summation order too: a
padded text's vector differed from its unpadded one by up to 1.1e-7, measured.) Equal-length batches are also
faster than sorted padded ones (1,268 GenderBias-QA passages: 21.0 s vs 22.2 s; measured), and a batch holds at
most ``MAX_BATCH_TOKENS`` tokens (long texts: 32 a batch, a few per cent faster than 64 here, the same bytes).

:func:`batch_plan` is the one recipe for sentence vectors (:mod:`biaslab.embed`), layer states and the shared
frozen bottom (:mod:`biaslab.frozen`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
from collections.abc import Sequence

import numpy as np

from ..paths import cache_dir

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
        width = max(int(lengths[group[0]]), 1)
        size = batch_size if max_tokens is None else max(1, min(batch_size, max_tokens // width))
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
        from ..io import write_json

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
