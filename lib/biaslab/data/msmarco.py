"""MS MARCO passage-ranking formats, for users who have the collection (fairrank's paper setting: 3M training
pairs, the 1,765 + 215 query sets) and for run files in and out.

* :func:`read_collection` — ``collection.tsv``: ``pid<TAB>passage``.
* :func:`read_queries` — ``queries.*.tsv``: ``qid<TAB>query``.
* :func:`read_qrels` — TREC qrels ``qid 0 docid grade`` (space or tab separated; MS MARCO's ``qrels.*.tsv`` has
  the same four columns).
* :func:`read_triples` — ``triples.train.small.tsv``: ``query<TAB>positive passage<TAB>negative passage``.
* :func:`read_run` / :func:`write_run` — TREC run files ``qid Q0 docid rank score tag``.

The one MS MARCO file here is ``msmarco_train_triples_splade_toy`` (:data:`DATASET`: the first 100 training triples,
as SPLADE ships them): :func:`load_toy_triples`.

Ids stay strings (MS MARCO's are integers, other collections' are not). A malformed line is an error naming the
file, the line number and the expected layout; :func:`write_run` writes atomically.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from ._schema import DataError, dataset_dir

DATASET = "msmarco_train_triples_splade_toy"


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found — point the fairrank data keys at your MS MARCO files")
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\n").rstrip("\r")
            if line.strip():
                yield n, line


def _bad(path, n: int, expected: str, line: str) -> DataError:
    return DataError(f"{path}: line {n}: expected {expected}, got {line[:80]!r} — fix or remove the line")


def _two_columns(path, what: str, key: str, value: str) -> pd.DataFrame:
    rows = []
    for n, line in _lines(path):
        a, sep, b = line.partition("\t")
        if not sep or not a.strip() or not b.strip():
            raise _bad(path, n, f"'{what}<TAB>text'", line)
        rows.append((a.strip(), b))
    return pd.DataFrame(rows, columns=[key, value])


def read_collection(path: str | os.PathLike) -> pd.DataFrame:
    """``docid``, ``text``."""
    return _two_columns(path, "pid", "docid", "text")


def read_queries(path: str | os.PathLike) -> pd.DataFrame:
    """``qid``, ``query``."""
    return _two_columns(path, "qid", "qid", "query")


def read_qrels(path: str | os.PathLike) -> pd.DataFrame:
    """``qid``, ``docid``, ``relevance`` (int)."""
    rows = []
    for n, line in _lines(path):
        parts = line.split()
        if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
            raise _bad(path, n, "'qid 0 docid grade' (four columns, an integer grade)", line)
        rows.append((parts[0], parts[2], int(parts[3])))
    return pd.DataFrame(rows, columns=["qid", "docid", "relevance"])


def read_triples(path: str | os.PathLike) -> pd.DataFrame:
    """``query``, ``positive``, ``negative``."""
    rows = []
    for n, line in _lines(path):
        parts = line.split("\t")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise _bad(path, n, "'query<TAB>positive<TAB>negative'", line)
        rows.append(tuple(parts))
    return pd.DataFrame(rows, columns=["query", "positive", "negative"])


def read_run(path: str | os.PathLike) -> pd.DataFrame:
    """``qid``, ``docid``, ``rank``, ``score``, ``tag`` of a TREC run file."""
    rows = []
    for n, line in _lines(path):
        parts = line.split()
        if len(parts) != 6:
            raise _bad(path, n, "'qid Q0 docid rank score tag' (six columns)", line)
        try:
            rows.append((parts[0], parts[2], int(parts[3]), float(parts[4]), parts[5]))
        except ValueError:
            raise _bad(path, n, "an integer rank and a numeric score", line) from None
    return pd.DataFrame(rows, columns=["qid", "docid", "rank", "score", "tag"])


def write_run(path: str | os.PathLike, run: pd.DataFrame, tag: str) -> Path:
    """A TREC run file of ``run`` (``qid``, ``docid``, ``score``), ranked by score per query (ties by docid)."""
    from ..io import write_text

    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag {tag!r} must be a non-empty word without spaces")
    r = run.assign(qid=run["qid"].astype(str), docid=run["docid"].astype(str))
    r = r.sort_values(["qid", "score", "docid"], ascending=[True, False, True], kind="stable")
    r["rank"] = r.groupby("qid").cumcount() + 1
    lines = [f"{q} Q0 {d} {k} {s:.6f} {tag}" for q, d, k, s in r[["qid", "docid", "rank", "score"]].itertuples(index=False)]
    return write_text(path, "\n".join(lines) + "\n")


def load_toy_triples(raw_dir: str | os.PathLike) -> pd.DataFrame:
    """The 100 MS MARCO training triples of :data:`DATASET` (``query, positive, negative``)."""
    return read_triples(dataset_dir(DATASET, raw_dir) / "triplets_raw.tsv")


def validate(raw_dir: str | os.PathLike) -> dict[str, int]:
    return {"triplets_raw.tsv": len(load_toy_triples(raw_dir))}
