"""SBIC v2 (Social Bias Frames, Sap et al., ACL 2020) — aggregated files, one row per post.

Only the dev and test aggregates are obtainable here (the train split is not). :func:`load` returns
``post``, ``target_minority``, ``target_category``, ``target_stereotype`` (lists, parsed from JSON),
``who_target``, ``intent``, ``sex``, ``offensive`` (annotator means, 0–1; ``who_target`` may be NaN),
``data_source`` and ``biased`` — True when the post carries a biased implication. Note the release's
inverted naming: its ``hasBiasedImplication`` is 1 when ``targetStereotype`` is *empty*; ``biased`` is
derived from the stereotype list itself and checked against that column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd

from ._schema import (
    DataError,
    dataset_dir,
    fix_for,
    parse_json_list,
    read_csv,
    require_columns,
    require_values,
)

DATASET = "sbic"
FILES = {"dev": "SBIC.v2.agg.dev.csv", "test": "SBIC.v2.agg.tst.csv"}
CATEGORIES = ("race", "gender", "culture", "victim", "disabled", "social", "body")
COLUMNS = ("post", "targetMinority", "targetCategory", "targetStereotype", "whoTarget", "intentYN", "sexYN",
           "offensiveYN", "dataSource", "hasBiasedImplication")


def load(split: Literal["dev", "test"], raw_dir: str | Path) -> pd.DataFrame:
    if split not in FILES:
        raise ValueError(f"SBIC split {split!r}: only {sorted(FILES)} are available (the train split is not)")
    path = dataset_dir(DATASET, raw_dir) / FILES[split]
    df = read_csv(path, DATASET, index_col=0)
    require_columns(df, COLUMNS, path, DATASET)
    require_values(df, ["post"], path, DATASET, what="record")
    out = pd.DataFrame({"post": df["post"].astype(str).str.strip()})
    for col, new in (("targetMinority", "target_minority"), ("targetCategory", "target_category"),
                     ("targetStereotype", "target_stereotype")):
        out[new] = [parse_json_list(v, path, i, col, DATASET) for i, v in enumerate(df[col].tolist())]
    for i, cats in enumerate(out["target_category"]):
        unknown = set(cats) - set(CATEGORIES)
        if unknown:
            raise DataError(f"{path}: record {i}: unknown targetCategory {sorted(unknown)}; expected "
                            f"{list(CATEGORIES)} — {fix_for(DATASET)}")
    for col, new in (("whoTarget", "who_target"), ("intentYN", "intent"), ("sexYN", "sex"),
                     ("offensiveYN", "offensive")):
        values = pd.to_numeric(df[col], errors="coerce")
        bad = df[col].notna() & values.isna()
        if bad.any():
            pos = int(bad.to_numpy().nonzero()[0][0])
            raise DataError(f"{path}: record {pos}: column {col!r} is not a number — {fix_for(DATASET)}")
        out[new] = values.to_numpy()
    out["data_source"] = df["dataSource"].astype(str).to_numpy()
    out["biased"] = out["target_stereotype"].map(len) > 0
    released = df["hasBiasedImplication"].to_numpy() == 0
    if not (released == out["biased"].to_numpy()).all():
        pos = int((released != out["biased"].to_numpy()).nonzero()[0][0])
        raise DataError(f"{path}: record {pos}: hasBiasedImplication disagrees with targetStereotype — "
                        f"{fix_for(DATASET)}")
    return out.reset_index(drop=True)


def load_dev_test(raw_dir: str | Path) -> pd.DataFrame:
    """The dev and test aggregates together (the train split is not public), with ``split`` and the record's
    ``row`` within its file."""
    frames = [load(s, raw_dir) for s in ("dev", "test")]
    return pd.concat([f.assign(split=s, row=range(len(f))) for s, f in zip(("dev", "test"), frames, strict=True)],
                     ignore_index=True)


def validate(raw_dir: str | Path) -> dict[str, int]:
    return {FILES[s]: len(load(s, raw_dir)) for s in FILES}
