"""Schema checks shared by the readers: clear errors that name the file, the row or column and the fix."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

REFETCH = "restore the official file with `biaslab fetch {dataset}` (or `dvc repro fetch`)"


class DataError(ValueError):
    """An input data file is missing or does not have the documented schema."""


def fix_for(dataset: str) -> str:
    return REFETCH.format(dataset=dataset)


def dataset_dir(dataset: str, raw_dir: str | Path) -> Path:
    """``<raw_dir>/<dataset>`` (``raw_dir``: the folder ``data.raw_dir`` names, resolved by the caller)."""
    if raw_dir is None:
        raise TypeError(f"dataset_dir({dataset!r}): raw_dir is required (the resolved data.raw_dir of params.yaml)")
    folder = Path(raw_dir) / dataset
    if not folder.is_dir():
        raise DataError(
            f"data set {dataset!r} not found at {folder}: fetch it with `biaslab fetch {dataset}` or "
            "`dvc repro fetch` (set BIASLAB_DATA_MIRROR to a local copy of the data sets when offline)"
        )
    return folder


def require_file(path: Path, dataset: str) -> Path:
    if not path.is_file():
        raise DataError(f"{path}: file not found — {fix_for(dataset)}")
    return path


def read_csv(path: Path, dataset: str, **kwargs: Any) -> pd.DataFrame:
    require_file(path, dataset)
    try:
        return pd.read_csv(path, **kwargs)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as err:
        raise DataError(f"{path}: not a readable CSV ({err}) — {fix_for(dataset)}") from None


def require_columns(df: pd.DataFrame, columns: Iterable[str], path: Path, dataset: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing} (found {list(df.columns)}) — {fix_for(dataset)}")


def require_values(df: pd.DataFrame, columns: Iterable[str], path: Path, dataset: str,
                   *, row_offset: int = 2, what: str = "row") -> None:
    """No empty cells in ``columns``; the error names the first bad row (``row_offset`` converts a 0-based
    frame position to the file's line number: 2 for a CSV with a header, 1 for JSONL)."""
    for col in columns:
        bad = df[col].isna() | (df[col].astype(str).str.strip() == "")
        if bad.any():
            pos = int(bad.to_numpy().nonzero()[0][0])
            raise DataError(f"{path}: {what} {pos + row_offset}: column {col!r} is empty "
                            f"({int(bad.sum())} such rows) — {fix_for(dataset)}")


def require_allowed(df: pd.DataFrame, column: str, allowed: Iterable[Any], path: Path, dataset: str,
                    *, row_offset: int = 2, what: str = "row") -> None:
    allowed = set(allowed)
    bad = ~df[column].isin(allowed)
    if bad.any():
        pos = int(bad.to_numpy().nonzero()[0][0])
        raise DataError(f"{path}: {what} {pos + row_offset}: column {column!r} has {df[column].iloc[pos]!r}, "
                        f"expected one of {sorted(map(str, allowed))} — {fix_for(dataset)}")


def read_jsonl(path: Path, dataset: str, required: Iterable[str] = ()) -> list[dict[str, Any]]:
    """One JSON object per line; the error names the line number of a malformed record."""
    require_file(path, dataset)
    required = list(required)
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}: line {lineno}: not valid JSON ({err.msg}) — {fix_for(dataset)}") from None
            if not isinstance(rec, dict):
                raise DataError(f"{path}: line {lineno}: expected a JSON object — {fix_for(dataset)}")
            missing = [k for k in required if k not in rec]
            if missing:
                raise DataError(f"{path}: line {lineno}: missing field(s) {missing} — {fix_for(dataset)}")
            rows.append(rec)
    if not rows:
        raise DataError(f"{path}: no records — {fix_for(dataset)}")
    return rows


def parse_json_list(value: Any, path: Path, row: int, column: str, dataset: str) -> list:
    """A JSON list stored in a CSV cell (SBIC's list columns)."""
    if isinstance(value, float) and pd.isna(value):
        return []
    try:
        parsed = json.loads(value)
    except (TypeError, json.JSONDecodeError):
        raise DataError(f"{path}: row {row}: column {column!r} is not a JSON list ({str(value)[:60]!r}) — "
                        f"{fix_for(dataset)}") from None
    if not isinstance(parsed, list):
        raise DataError(f"{path}: row {row}: column {column!r} is not a JSON list — {fix_for(dataset)}")
    return parsed
