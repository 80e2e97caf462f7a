"""The ``ragcontrol_rag`` stage (Kim et al. 2025, App. "Prompt Template"): one reader LLM answers every test question
of the reader subset with no document and with the document each setting retrieved; its answers' sides give the
**RAG bias** per setting (share on the bias1 side minus share on the bias2 side, in percent). How an answer is
read (scored or generated + judged) is the reader's mode, see :mod:`.reader`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from . import control, judges, reader
from . import evaluate as ev
from .tasks import GROUPS


def offline_judge(tasks_dir: Path, task: str):
    """The judge the data stage built for ``task`` (its ``judge.json``), used on generated answers."""
    return judges.from_spec(json.loads((tasks_dir / task / "judge.json").read_text(encoding="utf-8")))


def task_mode(reader_cfg, task: str) -> str:
    """The answer mode a reader (``ragcontrol.readers.<key>``) uses on ``task``: its ``gender_mode`` on
    GenderBias-QA, its ``politics_mode`` on PoliticBias-QA."""
    return reader_cfg.gender_mode if task == "GenderBias-QA" else reader_cfg.politics_mode


def answer_task(task: str, mode: str, *, test: pd.DataFrame, corpus: pd.DataFrame, retrieved: pd.DataFrame,
                subset: list[str], scorer=None, llm=None, gen=None, judge=None,
                max_doc_words: int | None) -> tuple[pd.DataFrame, list[dict]]:
    """The reader's side for every (question, document) any setting retrieved for the subset's questions and with
    no document (``doc_id`` −1), and one RAG-bias record per setting plus the no-document baseline.

    ``test`` is indexed by ``qid``; ``retrieved``: this task's rows of the retrieval stage. A GenderBias-QA
    question without answer names cannot be scored by the likelihood reader and is left out (reported)."""
    groups = GROUPS[task]
    keep = list(subset)
    if task == "GenderBias-QA" and mode == "likelihood":
        named = test.loc[keep, ["female_name", "male_name"]].notna().all(axis=1)
        print(f"{task}: {int((~named).sum())} of {len(keep)} subset questions lack an answer name and are skipped")
        keep = [q for q in keep if named[q]]
    rows = retrieved[(retrieved["task"] == task) & retrieved["qid"].isin(keep)]
    pairs = pd.concat([rows[["qid", "doc_id"]], pd.DataFrame({"qid": keep, "doc_id": -1})]).drop_duplicates()
    docs = [None if d < 0 else corpus["text"].iat[d] for d in pairs["doc_id"]]
    sides = reader.decide(task, mode, test.loc[pairs["qid"]].reset_index(), docs, scorer=scorer, llm=llm, gen=gen,
                          judge=judge if mode == "generate" else None, max_doc_words=max_doc_words)
    pairs = pairs.assign(task=task, side=sides)
    side = pairs.set_index(["qid", "doc_id"])["side"]
    bias, n = ev.rag_bias([side[(q, -1)] for q in keep], groups)
    results = [{"task": task, "method": "no document", "setting": "no document", "rag_bias": bias, "answered": n,
                "questions": len(keep), "embedder_bias": np.nan, "embedder_bias_expected": np.nan}]
    for (method, setting), g in rows.groupby(["method", "setting"], sort=False):
        bias, n = ev.rag_bias([side[(q, d)] for q, d in zip(g["qid"], g["doc_id"], strict=True)], groups)
        results.append({"task": task, "method": method, "setting": setting, "rag_bias": bias, "answered": n,
                        "questions": len(g), "embedder_bias": control.bias_percent(g["bias1"], g["bias2"]),
                        "embedder_bias_expected": control.bias_percent(g["p_bias1"], g["p_bias2"])})
    return pairs, results


def answer_tasks(tasks_dir: Path, tasks, reader_cfg, *, retrieved: pd.DataFrame, subset: pd.DataFrame, judge_of, scorer,
                 llm, gen, max_doc_words: int | None) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    """:func:`answer_task` on every task, each in the reader's mode for it (:func:`task_mode`), with the data stage's
    test questions and corpus (``tasks_dir``) and the questions of the reader subset: (every answer, one RAG-bias
    row per task × setting, each task's test questions indexed by ``qid``). ``judge_of``: task → its judge."""
    answers, results, tests = [], [], {}
    for task in tasks:
        tests[task] = pd.read_parquet(tasks_dir / task / "test_questions.parquet").set_index("qid")
        pairs, rows = answer_task(
            task, task_mode(reader_cfg, task), test=tests[task],
            corpus=pd.read_parquet(tasks_dir / task / "corpus.parquet"), retrieved=retrieved,
            subset=subset.loc[subset["task"] == task, "qid"].tolist(), scorer=scorer, llm=llm, gen=gen,
            judge=judge_of[task], max_doc_words=max_doc_words)
        answers.append(pairs)
        results += rows
    return pd.concat(answers, ignore_index=True), pd.DataFrame(results), tests


def generation_check(task: str, test: pd.DataFrame, n: int, *, llm, gen, judge) -> dict:
    """How often free generation lands on a side: the first ``n`` test questions answered greedily with no
    document, read by the judge (why a small reader is scored instead)."""
    head = test.reset_index().head(n)
    sides = reader.decide(task, "generate", head, [None] * len(head), llm=llm, gen=gen, judge=judge,
                          max_doc_words=None)
    return {"task": task, "questions": len(head),
            "answers on a side (%)": 100 * float(np.mean([s is not None for s in sides]))}


def generation_checks(tests: dict[str, pd.DataFrame], n: int, *, llm, gen, judge_of) -> pd.DataFrame:
    """:func:`generation_check` on every task (``tests``: task → its test questions; ``judge_of``: task → its
    judge); an empty table when ``n`` is 0."""
    rows = [generation_check(task, test, n, llm=llm, gen=gen, judge=judge_of[task]) for task, test in tests.items()] \
        if n else []
    return pd.DataFrame(rows, columns=["task", "questions", "answers on a side (%)"])
