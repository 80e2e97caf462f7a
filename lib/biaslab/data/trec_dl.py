"""TREC Deep Learning 2019 / 2020 passage ranking: BM25 top-100 candidates with MS MARCO passage text, NIST
qrels and topics — a small, real, graded re-ranking benchmark that fits offline.

* :func:`load_candidates` (dl19 | dl20): ``qid`` (str), ``docid`` (str), ``rank``, ``bm25``, ``text``.
* :func:`load_qrels`: ``qid``, ``docid`` (str), ``relevance`` (0–3).
* :func:`load_topics`: ``qid``, ``query``.
* :func:`judged_queries`: qids with at least one judgment of grade ≥ 1 among the candidates (the ones a
  re-ranking evaluation can score).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pandas as pd

from ._schema import DataError, dataset_dir, fix_for, require_file

DATASET = "trecdl_passage_bm25_top100_text"
YEARS = ("dl19", "dl20")
_TOPICS = {"dl19": "topics.dl19-passage.txt", "dl20": "topics.dl20.txt"}

Year = Literal["dl19", "dl20"]


def _check_year(year: str) -> None:
    if year not in YEARS:
        raise ValueError(f"unknown TREC DL year {year!r}; expected one of {YEARS}")


def load_candidates(year: Year, raw_dir: str | Path) -> pd.DataFrame:
    _check_year(year)
    path = require_file(dataset_dir(DATASET, raw_dir) / f"retrieve_results_bm25_{year}.json", DATASET)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: not valid JSON ({err}) — {fix_for(DATASET)}") from None
    rows = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict) or "hits" not in entry:
            raise DataError(f"{path}: entry {i} has no 'hits' list — {fix_for(DATASET)}")
        for hit in entry["hits"]:
            missing = {"qid", "docid", "rank", "score", "content"} - set(hit)
            if missing:
                raise DataError(f"{path}: entry {i} ({entry.get('query', '?')!r}) has a hit without "
                                f"{sorted(missing)} — {fix_for(DATASET)}")
            rows.append({"qid": str(hit["qid"]), "docid": str(hit["docid"]), "rank": int(hit["rank"]),
                         "bm25": float(hit["score"]), "text": str(hit["content"])})
    return pd.DataFrame(rows)


def load_qrels(year: Year, raw_dir: str | Path) -> pd.DataFrame:
    _check_year(year)
    path = require_file(dataset_dir(DATASET, raw_dir) / f"qrels.{year}-passage.txt", DATASET)
    df = pd.read_csv(path, sep=r"\s+", header=None, names=["qid", "q0", "docid", "relevance"], dtype=str)
    bad = df["relevance"].isna() | ~df["relevance"].fillna("").str.fullmatch(r"-?\d+")
    if bad.any():
        raise DataError(f"{path}: line {int(bad.to_numpy().nonzero()[0][0]) + 1}: expected 'qid Q0 docid grade' "
                        f"— {fix_for(DATASET)}")
    return df.assign(relevance=df["relevance"].astype(int))[["qid", "docid", "relevance"]]


def load_topics(year: Year, raw_dir: str | Path) -> pd.DataFrame:
    _check_year(year)
    path = require_file(dataset_dir(DATASET, raw_dir) / _TOPICS[year], DATASET)
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        qid, sep, query = line.partition("\t")
        if not sep or not query.strip():
            raise DataError(f"{path}: line {n}: expected 'qid<TAB>query' — {fix_for(DATASET)}")
        rows.append({"qid": qid.strip(), "query": query.strip()})
    return pd.DataFrame(rows)


def judged_queries(candidates: pd.DataFrame, qrels: pd.DataFrame) -> list[str]:
    rel = qrels[qrels["relevance"] > 0].merge(candidates[["qid", "docid"]], on=["qid", "docid"])
    return sorted(rel["qid"].unique(), key=lambda q: (len(q), q))


def validate(raw_dir: str | Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for y in YEARS:
        out[f"retrieve_results_bm25_{y}.json"] = len(load_candidates(y, raw_dir))
        out[f"qrels.{y}-passage.txt"] = len(load_qrels(y, raw_dir))
        out[_TOPICS[y]] = len(load_topics(y, raw_dir))
    return out
