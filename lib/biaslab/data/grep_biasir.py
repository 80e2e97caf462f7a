"""Grep-BiasIR (Krieg et al., CHIIR 2023): 117 gender-neutral queries, each with a relevant and a non-relevant
document in female / male / neutral wording.

* :func:`load_queries`: ``q_id``, ``category`` (7 gender dimensions), ``query``.
* :func:`load_documents`: ``q_id``, ``d_id``, ``relevant`` (bool), ``query``, ``doc_title``, ``document``,
  ``content_gender`` (F | M | N; the release's few ``both``/``botrh`` values are normalised to ``both``),
  ``exp_stereotype``, ``category``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._schema import dataset_dir, read_csv, require_allowed, require_columns, require_values

DATASET = "grep_biasir"
CATEGORIES = ("Appearance", "Career", "Child_Care", "Cognitive_Capabilities", "Domestic_Work",
              "Physical_Capabilities", "Sex_and_Relationship")


def load_queries(raw_dir: str | Path) -> pd.DataFrame:
    path = dataset_dir(DATASET, raw_dir) / "queries.csv"
    df = read_csv(path, DATASET, dtype={"q_id": int, "category": str, "query": str}, keep_default_na=False)
    require_columns(df, ("q_id", "category", "query"), path, DATASET)
    require_values(df, ("category", "query"), path, DATASET)
    return df


def load_documents(raw_dir: str | Path) -> pd.DataFrame:
    root = dataset_dir(DATASET, raw_dir)
    frames = []
    for cat in CATEGORIES:
        path = root / f"queries-documents_{cat}.csv"
        df = read_csv(path, DATASET, dtype=str, keep_default_na=False)
        require_columns(df, ("q_id", "d_id", "relevant", "query", "doc_title", "document", "content_gender"),
                        path, DATASET)
        require_values(df, ("q_id", "d_id", "document", "content_gender"), path, DATASET)
        df["content_gender"] = df["content_gender"].str.strip().replace({"botrh": "both"})
        require_allowed(df, "content_gender", ("F", "M", "N", "both"), path, DATASET)
        require_allowed(df, "relevant", ("0", "1"), path, DATASET)
        df = df.assign(q_id=df["q_id"].astype(int), d_id=df["d_id"].astype(int), relevant=df["relevant"] == "1",
                       category=cat)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def validate(raw_dir: str | Path) -> dict[str, int]:
    return {"queries": len(load_queries(raw_dir)), "documents": len(load_documents(raw_dir))}
