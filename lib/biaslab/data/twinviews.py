"""TwinViews-13k (Fulay et al., EMNLP 2024): topically matched left / right political statements.

:func:`load` returns ``left``, ``right``, ``topic`` (13,855 rows). Every PoliticBias-QA claim pair occurs
here verbatim: filter with :func:`exclude_pairs` before training on TwinViews."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._schema import dataset_dir, read_csv, require_columns, require_values

DATASET = "twinviews_13k"
FILE = "twinviews-13k.csv"


def load(raw_dir: str | Path) -> pd.DataFrame:
    path = dataset_dir(DATASET, raw_dir) / FILE
    df = read_csv(path, DATASET, dtype=str, keep_default_na=False)
    require_columns(df, ("l", "r", "topic"), path, DATASET)
    require_values(df, ("l", "r", "topic"), path, DATASET)
    return pd.DataFrame({"left": df["l"], "right": df["r"], "topic": df["topic"]})


def exclude_pairs(twin: pd.DataFrame, claims: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``twin`` whose left or right statement is not among ``claims`` (columns left_claim, right_claim)."""
    used = set(claims["left_claim"]) | set(claims["right_claim"])
    return twin[~(twin["left"].isin(used) | twin["right"].isin(used))].reset_index(drop=True)


def validate(raw_dir: str | Path) -> dict[str, int]:
    return {FILE: len(load(raw_dir))}
