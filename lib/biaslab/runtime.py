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
