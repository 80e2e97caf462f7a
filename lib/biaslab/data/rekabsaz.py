"""Gender-bias IR resources of Rekabsaz & Schedl (SIGIR 2020) and Rekabsaz, Kopeinik & Schedl (SIGIR 2021).

* :func:`load_gender_queries`: 3,750 MS MARCO dev queries with a gender label (``n`` neutral — the 1,765
  queries of "QS1" —, ``f``, ``m``, ``o``). The raw CSV has no quoting and 22 queries contain commas, so
  it is split as first field = qid, last field = label, the rest = query (or read from the clean TSV).
* :func:`load_fair_queries` (``msmarco`` 215 queries "QS2" | ``trecdl19`` 30): ``qid``, ``query`` and, with
  ``annotated=True``, ``categories``, ``domains``, ``subdomains``, ``description``.
* :func:`load_wordlist` (``genderspecific`` 32 + 32 words for ARaB | ``representative`` 163 + 163 for
  NFaiRR): ``word``, ``gender`` (f | m), lower-cased.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd

from ._schema import DataError, dataset_dir, fix_for, read_csv, require_allowed, require_columns, require_file

IR2020 = "genderbias_ir_rekabsaz2020"
IR2021 = "msmarco_fair_queries_rekabsaz2021"


def load_gender_queries(raw_dir: str | Path, *, clean: bool = False) -> pd.DataFrame:
    root = dataset_dir(IR2020, raw_dir)
    if clean:
        path = root / "queries_gender_annotated.clean.tsv"
        df = read_csv(path, IR2020, sep="\t", dtype=str, keep_default_na=False, quoting=3)
        require_columns(df, ("qid", "query", "label"), path, IR2020)
    else:
        path = require_file(root / "queries_gender_annotated.csv", IR2020)
        rows = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            parts = line.split(",")
            if len(parts) < 3:
                raise DataError(f"{path}: line {lineno}: expected qid,query,label — {fix_for(IR2020)}")
            rows.append((parts[0], ",".join(parts[1:-1]), parts[-1].strip()))
        df = pd.DataFrame(rows, columns=["qid", "query", "label"])
    require_allowed(df, "label", ("n", "f", "m", "o"), path, IR2020, row_offset=1 if not clean else 2,
                    what="line")
    bad = ~df["qid"].str.isdigit()
    if bad.any():
        pos = int(bad.to_numpy().nonzero()[0][0])
        raise DataError(f"{path}: line {pos + (2 if clean else 1)}: qid {df['qid'].iloc[pos]!r} is not a number — "
                        f"{fix_for(IR2020)}")
    df["qid"] = df["qid"].astype(int)
    return df.reset_index(drop=True)


def load_fair_queries(which: Literal["msmarco", "trecdl19"], raw_dir: str | Path,
                      *, annotated: bool = False) -> pd.DataFrame:
    stem = {"msmarco": "msmarco_passage.dev.fair", "trecdl19": "trecdeep19_passage.fair"}[which]
    root = dataset_dir(IR2021, raw_dir)
    if annotated:
        path = root / f"{stem}.FULL_ANNOTATION.tsv"
        df = read_csv(path, IR2021, sep="\t", dtype=str, keep_default_na=False, quoting=3)
        require_columns(df, ("QID", "Query", "Categories", "Domains", "Subdomains"), path, IR2021)
        df = df.rename(columns={"QID": "qid", "Query": "query", "Categories": "categories", "Domains": "domains",
                                "Subdomains": "subdomains", "Example/Description": "description"})
    else:
        path = root / f"{stem}.tsv"
        df = read_csv(path, IR2021, sep="\t", header=None, names=["qid", "query"], dtype=str,
                      keep_default_na=False, quoting=3)
    bad = ~df["qid"].str.strip().str.isdigit()
    if bad.any():
        pos = int(bad.to_numpy().nonzero()[0][0])
        raise DataError(f"{path}: row {pos + 1}: qid {df['qid'].iloc[pos]!r} is not a number — {fix_for(IR2021)}")
    df["qid"] = df["qid"].astype(int)
    return df.reset_index(drop=True)


def load_wordlist(kind: Literal["genderspecific", "representative"],
                  raw_dir: str | Path) -> pd.DataFrame:
    dataset, name = {"genderspecific": (IR2020, "wordlist_genderspecific.txt"),
                     "representative": (IR2021, "wordlist_gender_representative.txt")}[kind]
    path = require_file(dataset_dir(dataset, raw_dir) / name, dataset)
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        word, sep, gender = line.strip().rpartition(",")
        if not sep or gender not in ("f", "m") or not word:
            raise DataError(f"{path}: line {lineno}: expected 'word,f' or 'word,m', got {line!r} — {fix_for(dataset)}")
        rows.append((word.lower(), gender))
    return pd.DataFrame(rows, columns=["word", "gender"])


def validate_2020(raw_dir: str | Path) -> dict[str, int]:
    q = load_gender_queries(raw_dir)
    qc = load_gender_queries(raw_dir, clean=True)
    if len(q) != len(qc):
        raise DataError(f"{IR2020}: the raw ({len(q)}) and clean ({len(qc)}) query files disagree — {fix_for(IR2020)}")
    return {"queries": len(q), "wordlist": len(load_wordlist("genderspecific", raw_dir))}


def validate_2021(raw_dir: str | Path) -> dict[str, int]:
    out = {w: len(load_fair_queries(w, raw_dir)) for w in ("msmarco", "trecdl19")}
    out.update({f"{w}_annotated": len(load_fair_queries(w, raw_dir, annotated=True)) for w in ("msmarco", "trecdl19")})
    out["wordlist"] = len(load_wordlist("representative", raw_dir))
    return out


__all__ = ["load_fair_queries", "load_gender_queries", "load_wordlist"]
