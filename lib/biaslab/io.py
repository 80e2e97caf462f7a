"""The file formats of stage outputs: CSV, JSON, Parquet and text as the pipeline writes them (float format,
non-finite values, key order), each written atomically (:mod:`biaslab.atomic`).

These choices decide an output's bytes, so this module is a dependency of every stage that writes through it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .atomic import atomic_open, atomic_path


def write_text(path: str | os.PathLike, text: str) -> Path:
    with atomic_open(path, "w") as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return obj.as_posix()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _finite(obj: Any) -> Any:
    """``obj`` with every NaN / infinite float (Python or NumPy) replaced by None, containers walked."""
    import math

    import numpy as np

    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _finite(obj.tolist())
    return obj


def write_json(path: str | os.PathLike, obj: Any, *, indent: int = 2) -> Path:
    """Strict JSON with sorted keys and a trailing newline, so reruns give byte-identical files. A missing value
    (NaN, e.g. the std of one seed) or an infinity is written as ``null``: ``NaN`` is not JSON and strict readers
    (browsers, jq) reject the file."""
    text = json.dumps(_finite(obj), indent=indent, sort_keys=True, default=_json_default, allow_nan=False)
    return write_text(path, text + "\n")


def write_csv(path: str | os.PathLike, df, *, float_format: str | None = "%.6g", **kwargs: Any) -> Path:
    """A tidy CSV (no index by default) written atomically; floats rounded so reruns diff cleanly."""
    kwargs.setdefault("index", False)
    with atomic_open(path, "w", newline="") as fh:
        df.to_csv(fh, float_format=float_format, **kwargs)
    return Path(path)


def write_parquet(path: str | os.PathLike, df, **kwargs: Any) -> Path:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, **kwargs)
    return Path(path)
