"""GenderBias-QA and PoliticBias-QA (Kim, Springer, Raghunathan, Sap — Findings of ACL 2025).

* :func:`load_genderbias_qa` (train | test): ``num``, ``topic``, ``question`` and four passages
  ``female_doc1``, ``female_doc2`` (the release's bias1 = answers with a woman), ``male_doc1``, ``male_doc2``
  (bias2 = a man).
* :func:`load_politicbias_qa` (train | val | test): ``num`` (absent for val, which exists only in the
  authors' Arrow export), ``topic``, ``question``, ``left_claim``, ``right_claim``.
* :func:`load_corpus` (GenderBias-QA | PoliticBias-QA): the retrieval corpus, column ``text``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd

from ._schema import dataset_dir, read_csv, read_jsonl, require_columns, require_values

DATASET = "debiasing_rag_kim2025"
TASKS = ("GenderBias-QA", "PoliticBias-QA")


def load_genderbias_qa(split: Literal["train", "test"], raw_dir: str | Path) -> pd.DataFrame:
    path = dataset_dir(DATASET, raw_dir) / f"GenderBias-QA_{split}.csv"
    df = read_csv(path, DATASET, dtype=str, keep_default_na=False)
    cols = ("num", "topic", "question", "bias1-document1", "bias1-document2", "bias2-document1", "bias2-document2")
    require_columns(df, cols, path, DATASET)
    require_values(df, cols, path, DATASET)
    return pd.DataFrame({
        "num": df["num"].astype(int), "topic": df["topic"], "question": df["question"],
        "female_doc1": df["bias1-document1"], "female_doc2": df["bias1-document2"],
        "male_doc1": df["bias2-document1"], "male_doc2": df["bias2-document2"],
    })


def load_politicbias_qa(split: Literal["train", "val", "test"],
                        raw_dir: str | Path) -> pd.DataFrame:
    root = dataset_dir(DATASET, raw_dir)
    if split == "val":
        path = root / "hf_splits_jsonl" / "PoliticBias-QA__val.jsonl"
        rows = read_jsonl(path, DATASET, ("topics", "queries", "left_claims", "right_claims"))
        df = pd.DataFrame(rows).rename(columns={"topics": "topic", "queries": "question",
                                                "left_claims": "left_claim", "right_claims": "right_claim"})
        require_values(df, ("topic", "question", "left_claim", "right_claim"), path, DATASET, row_offset=1,
                       what="line")
        return df[["topic", "question", "left_claim", "right_claim"]]
    path = root / f"PoliticBias-QA_{split}.csv"
    df = read_csv(path, DATASET, dtype=str, keep_default_na=False)
    cols = ("num", "topic", "question", "left_claim", "right_claim")
    require_columns(df, cols, path, DATASET)
    require_values(df, cols, path, DATASET)
    df["num"] = df["num"].astype(int)
    return df[list(cols)]


def load_corpus(task: Literal["GenderBias-QA", "PoliticBias-QA"], raw_dir: str | Path) -> pd.DataFrame:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {TASKS}")
    path = dataset_dir(DATASET, raw_dir) / "hf_splits_jsonl" / f"{task}__corpus.jsonl"
    df = pd.DataFrame(read_jsonl(path, DATASET, ("text",)))
    require_values(df, ("text",), path, DATASET, row_offset=1, what="line")
    return df[["text"]]


def validate(raw_dir: str | Path) -> dict[str, int]:
    out = {f"GenderBias-QA_{s}": len(load_genderbias_qa(s, raw_dir)) for s in ("train", "test")}
    out.update({f"PoliticBias-QA_{s}": len(load_politicbias_qa(s, raw_dir)) for s in ("train", "val", "test")})
    out.update({f"{t}__corpus": len(load_corpus(t, raw_dir)) for t in TASKS})
    return out
