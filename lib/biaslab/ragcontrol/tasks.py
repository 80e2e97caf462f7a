"""GenderBias-QA and PoliticBias-QA as the ragcontrol experiments use them (Kim et al. 2025, App. "Dataset
Creation", "Validation Corpus").

* Groups: bias1 − bias2 is female − male and conservative − liberal (the public code's ``get_topics``: topic1
  = female / right). Every bias number in this package is a percentage in that orientation.
* :func:`questions`: one row per question of a split with the documents that answer it — GenderBias-QA: its two
  female and two male passages; PoliticBias-QA: its left and right claim.
* :func:`eval_corpus`: the released retrieval corpus, deduplicated in released order, with each document's
  lean *as released* (the column it came from) and the question(s) it answers. GenderBias-QA's corpus is the four
  passages of all 317 questions; PoliticBias-QA's the left and right claims of train, val and test — the appendix's
  "validation corpus".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..data import kim2025

TASKS = ("GenderBias-QA", "PoliticBias-QA")
GROUPS = {"GenderBias-QA": ("female", "male"), "PoliticBias-QA": ("conservative", "liberal")}
SPLITS = {"GenderBias-QA": ("train", "test"), "PoliticBias-QA": ("train", "val", "test")}


def check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown ragcontrol task {task!r}; expected one of {TASKS}")


def questions(task: str, split: str, raw_dir: str | Path) -> pd.DataFrame:
    """``qid`` (``<split>-<num>``), ``topic``, ``question`` and the answering documents (see module doc)."""
    check_task(task)
    if task == "GenderBias-QA":
        df = kim2025.load_genderbias_qa(split, raw_dir)
        return pd.DataFrame({
            "qid": [f"{split}-{n}" for n in df["num"]], "split": split, "topic": df["topic"],
            "question": df["question"], "female_docs": list(zip(df["female_doc1"], df["female_doc2"], strict=True)),
            "male_docs": list(zip(df["male_doc1"], df["male_doc2"], strict=True))})
    df = kim2025.load_politicbias_qa(split, raw_dir)
    nums = df["num"] if "num" in df else range(len(df))
    return pd.DataFrame({"qid": [f"{split}-{n}" for n in nums], "split": split, "topic": df["topic"],
                         "question": df["question"], "left_claim": df["left_claim"],
                         "right_claim": df["right_claim"]})


def _answers(task: str, raw_dir, splits: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """(text, lean, qid) for every answering document of every split (``splits``: already loaded ones)."""
    rows = []
    for split in SPLITS[task]:
        q = splits[split] if splits is not None and split in splits else questions(task, split, raw_dir)
        if task == "GenderBias-QA":
            for lean, col in (("female", "female_docs"), ("male", "male_docs")):
                rows += [(t, lean, qid) for qid, docs in zip(q["qid"], q[col], strict=True) for t in docs]
        else:
            for lean, col in (("liberal", "left_claim"), ("conservative", "right_claim")):
                rows += list(zip(q[col], [lean] * len(q), q["qid"], strict=True))
    return pd.DataFrame(rows, columns=["text", "lean", "qid"])


def eval_corpus(task: str, raw_dir: str | Path,
                splits: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """``doc_id``, ``text``, ``lean`` (a group name, or ``mixed`` when the text answers for both sides) and
    ``qids`` (the questions whose released documents include this text). ``splits``: the task's splits as
    :func:`questions` returns them, when the caller has loaded them already (the rest are read)."""
    check_task(task)
    corpus = kim2025.load_corpus(task, raw_dir)["text"].drop_duplicates().reset_index(drop=True)
    ans = _answers(task, raw_dir, splits)
    lean = ans.groupby("text")["lean"].agg(lambda s: s.iloc[0] if s.nunique() == 1 else "mixed")
    qids = ans.groupby("text")["qid"].agg(lambda s: tuple(sorted(set(s))))
    out = pd.DataFrame({"doc_id": np.arange(len(corpus)), "text": corpus})
    out["lean"] = out["text"].map(lean).fillna("unlabelled")
    out["qids"] = out["text"].map(qids).apply(lambda v: v if isinstance(v, tuple) else ())
    return out
