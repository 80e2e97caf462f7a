"""IndiBias (Sahoo et al., NAACL 2024) — the official public sample of 561 English/Hindi sentence pairs.

Columns of :func:`load`: ``pair_id`` (the authors' ``index``), ``sent_more`` (more stereotypical English
sentence), ``sent_less`` (its minimally edited, less stereotypical counterpart), ``sent_more_hindi``,
``sent_less_hindi``, ``bias_type`` (gender, socioeconomic, Religion, age, Caste, physical-appearance,
disability — kept as released) and ``stereo_antistereo`` (stereo | antistereo).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._schema import (
    DataError,
    dataset_dir,
    fix_for,
    read_csv,
    require_allowed,
    require_columns,
    require_values,
)

DATASET = "indibias"
FILE = "IndiBias_v1_sample.csv"
BIAS_TYPES = ("gender", "socioeconomic", "Religion", "age", "Caste", "physical-appearance", "disability")
COLUMNS = ("index", "modified_eng_sent_more", "modified_eng_sent_less", "sent_more_hindi", "sent_less_hindi",
           "bias_type", "stereo_antistereo")


def load(raw_dir: str | Path) -> pd.DataFrame:
    path = dataset_dir(DATASET, raw_dir) / FILE
    df = read_csv(path, DATASET, dtype=str, keep_default_na=False)
    require_columns(df, COLUMNS, path, DATASET)
    require_values(df, ["index", "modified_eng_sent_more", "modified_eng_sent_less", "bias_type"], path, DATASET)
    require_allowed(df, "bias_type", BIAS_TYPES, path, DATASET)
    require_allowed(df, "stereo_antistereo", ("stereo", "antistereo"), path, DATASET)
    if df["index"].duplicated().any():
        pos = int(df["index"].duplicated().to_numpy().nonzero()[0][0])
        raise DataError(f"{path}: row {pos + 2}: duplicate pair index {df['index'].iloc[pos]!r} — {fix_for(DATASET)}")
    return pd.DataFrame({
        "pair_id": df["index"].astype(int),
        "sent_more": df["modified_eng_sent_more"].str.strip(),
        "sent_less": df["modified_eng_sent_less"].str.strip(),
        "sent_more_hindi": df["sent_more_hindi"],
        "sent_less_hindi": df["sent_less_hindi"],
        "bias_type": df["bias_type"],
        "stereo_antistereo": df["stereo_antistereo"],
    })


def validate(raw_dir: str | Path) -> dict[str, int]:
    return {FILE: len(load(raw_dir))}
