"""Seeding, device selection and progress bars — the same everywhere in the project."""

from __future__ import annotations

import os
import random
from collections.abc import Iterable
from typing import Any, TypeVar

T = TypeVar("T")


def seed_everything(seed: int, *, deterministic_torch: bool = False) -> None:
    """Seed Python, NumPy and (if importable) torch on every device. ``deterministic_torch`` also asks
    torch for deterministic kernels (slower on GPU; warnings only where none exists)."""
    random.seed(seed)  # (string hashing is fixed per process by PYTHONHASHSEED, which the runner sets for the kernel)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:  # pragma: no cover
        pass
    try:
        import torch
    except ImportError:  # pragma: no cover
        return
    torch.manual_seed(seed)
    if torch.cuda.is_available():  # pragma: no cover - no GPU here
        torch.cuda.manual_seed_all(seed)
    if deterministic_torch:
        torch.use_deterministic_algorithms(True, warn_only=True)


def select_device(preference: str) -> str:
    """``auto`` picks CUDA when torch sees a GPU and the CPU otherwise; ``cpu``/``cuda``/``cuda:N`` are
    honoured, and asking for CUDA where there is none is an error rather than a silent CPU run."""
    import torch

    pref = (preference or "auto").lower()
    if pref == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if pref.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"common.device is {preference!r} but torch sees no CUDA device "
                f"(torch {torch.__version__}); set common.device: auto or cpu, or install a CUDA build of torch"
            )
        return pref
    if pref == "cpu":
        return "cpu"
    raise ValueError(f"unknown device {preference!r}: use auto, cpu, cuda or cuda:N")


PRECISIONS = ("fp32", "bf16")


def autocast(device: str, precision: str):
    """The context a forward pass runs in at ``common.precision``: ``fp32`` (nothing changes) or ``bf16`` —
    ``torch.autocast`` with bfloat16 on ``device``'s type: matrix products and convolutions in bfloat16 with float32
    accumulation, normalisations, softmax and losses in float32, weights kept in float32.

    Why it is offered: on a CPU with native bfloat16 dot products (AVX512-BF16 or AMX) and on every recent GPU,
    encoding is ~1.8× faster at cosine ≥ 0.9999 to the float32 vectors (``benchmarks/bench_backends.py``). On a CPU
    without them oneDNN emulates bfloat16 and it is slower than float32: a warning says so once."""
    import contextlib

    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    if precision != "bf16":
        raise ValueError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)} (common.precision)")
    kind = torch.device(device).type
    if kind == "cpu" and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        _warn_once("common.precision is bf16 but this CPU has no native bfloat16 dot products: oneDNN emulates "
                   "them and bf16 is slower than fp32 here; set common.precision: fp32")
    return torch.autocast(kind, dtype=torch.bfloat16)


_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    import warnings

    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def progress_enabled() -> bool:
    """False inside pipeline stages (``TQDM_DISABLE=1``), so executed notebooks hold no progress noise."""
    return os.environ.get("TQDM_DISABLE", "0") not in ("1", "true", "True")


def progress(iterable: Iterable[T], *, desc: str | None = None, total: int | None = None,
             disable: bool = False, **kwargs: Any):
    """tqdm with the project's defaults. Pipeline stages set ``TQDM_DISABLE=1`` so executed notebooks
    stay free of progress noise; interactive use shows the bars (``disable`` hides one bar, e.g. a short loop)."""
    from tqdm import tqdm

    disable = disable or not progress_enabled()
    return tqdm(iterable, desc=desc, total=total, disable=disable, dynamic_ncols=True, **kwargs)
