"""cscl classification tasks: text, a task label y and a binary protected attribute a (cscl §4.1, App. B.1).

The paper's data (Jigsaw race, Bias in Bios) are not obtainable here in full; each offline task below is a real
stand-in, documented in its builder. Every builder returns ``text``, ``y`` (int), ``a`` (int), ``y_name``,
``a_name``, ``source`` with one row per distinct text. :func:`split` makes the seeded train / validation / test
partition stratified by (y, a), and :func:`check_no_leakage` proves that no text is in two parts.

Identity groups for toxicity × race (the paper binarises Jigsaw's race / ethnicity identity labels into black and
non-black; offline, a text belongs to the race task when it mentions a race / ethnicity term, and a = 1 when one of
them is a Black-identity term):
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .terms import BLACK_TERMS, GENDER_TERMS, OTHER_RACE_TERMS, identity_terms  # noqa: F401 (identity_terms re-exported)

TASKS = ("madlibs_race", "wiki_race", "sbic_race", "bios_gender", "genderqa_topic", "jigsaw_race", "biasbios_full")
PAPER_SIZES = {  # App. B.1, Tables 1-2: samples per split
    "jigsaw_race": {"train": 25954, "val": 4390, "test": 12562},
    "biasbios_full": {"train": 255710, "val": 39369, "test": 98344},
}
COLUMNS = ["text", "y", "a", "y_name", "a_name", "source"]  # + "group" where rows must stay together in a split


def _pattern(terms: Iterable[str]) -> re.Pattern:
    alts = sorted(terms, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(re.escape(t) for t in alts) + r")\b", re.IGNORECASE)


BLACK_RE, OTHER_RE = _pattern(BLACK_TERMS), _pattern(OTHER_RACE_TERMS)


def race_attribute(texts: Sequence[str]) -> np.ndarray:
    """1 = mentions a Black-identity term, 0 = mentions only other race / ethnicity terms, -1 = mentions none (not in
    the race task). "african american" counts as Black (the longer term wins over "american")."""
    s = pd.Series(list(texts), dtype=object)
    black = s.map(lambda t: bool(BLACK_RE.search(t)))
    other = s.map(lambda t: OTHER_RE.search(BLACK_RE.sub(" ", t)) is not None)
    return np.where(black, 1, np.where(other, 0, -1))


def _frame(text, y, a, y_names: Mapping[int, str], a_names: Mapping[int, str], source: str,
           group: Sequence[str] | None = None) -> pd.DataFrame:
    df = pd.DataFrame({"text": list(text), "y": np.asarray(y, dtype=int), "a": np.asarray(a, dtype=int)})
    if group is not None:
        df["group"] = list(group)
    df["y_name"] = df["y"].map(y_names)
    df["a_name"] = df["a"].map(a_names)
    df["source"] = source
    df = df[df["text"].str.len() > 0]
    # one row per text; a text labelled both ways (annotation noise) is dropped, never kept twice
    labels = df.groupby("text")[["y", "a"]].nunique()
    conflicted = set(labels.index[(labels["y"] > 1) | (labels["a"] > 1)])
    df = df[~df["text"].isin(conflicted)].drop_duplicates("text")
    return df.reset_index(drop=True)[COLUMNS + (["group"] if group is not None else [])]


RACE = {0: "non-black", 1: "black"}
TOXIC = {0: "non-toxic", 1: "toxic"}


def race_task(texts: Sequence[str], toxic: Sequence[bool], source: str) -> pd.DataFrame:
    """Rows that mention a race / ethnicity term, y = toxic, a = black vs non-black (:func:`race_attribute`)."""
    a = race_attribute(texts)
    keep = a >= 0
    return _frame(np.asarray(texts, dtype=object)[keep], np.asarray(toxic, dtype=int)[keep], a[keep], TOXIC, RACE,
                  source)


def build(task: str, raw_dir: str | Path, *, offensive_threshold: float, min_topic_questions: int,
          full_data: str | None = None) -> pd.DataFrame:
    """One task (see :data:`TASKS`):

    * ``madlibs_race`` — Dixon et al.'s templated sentences (bias_madlibs_77k) with a race / ethnicity term; y = BAD.
      Synthetic: the adjective decides y, so a classifier can be perfect and perfectly fair; a sanity task.
    * ``wiki_race`` — the real Wikipedia talk comments of Dixon et al.'s non-fuzzed test set that mention a race /
      ethnicity term; y = toxic. Small.
    * ``sbic_race`` — SBIC dev + test posts (Reddit, Twitter, Gab, Stormfront) that mention a race / ethnicity term;
      y = offensive (annotator mean ≥ ``offensive_threshold``). The closest real stand-in for Jigsaw race.
    * ``bios_gender`` — the Bias in Bios sample; y = profession, a = gender. Beware: the sample is 1,008 accountants
      and 10 bios of each other profession, so a classifier learns "accountant" and little else.
    * ``genderqa_topic`` — occupation × gender where more text is needed: the GenderBias-QA corpus passages (Kim et
      al. 2025; four generated biographies per question, two of a woman, two of a man); y = the question's topic
      (topics with at least ``min_topic_questions`` questions), a = gender (1 = female). The four passages of a
      question stay in one split (``group``), so no achievement is seen in training and tested.
    * ``jigsaw_race`` / ``biasbios_full`` — the paper's data from ``full_data`` (a Civil Comments CSV, or a Bias in
      Bios pickle / LabHC export) when a user has them."""
    from ..data import biasbios, jigsaw, sbic

    if task == "madlibs_race":
        m = jigsaw.load_madlibs(raw_dir)
        return race_task(m["text"], m["toxic"], "bias_madlibs_77k")
    if task == "wiki_race":
        w = jigsaw.load_wiki_testset(raw_dir, fuzzed=False)
        return race_task(w["text"], w["toxic"], "toxicity_nonfuzzed_testset")
    if task == "sbic_race":
        posts = pd.concat([sbic.load(s, raw_dir) for s in ("dev", "test")], ignore_index=True)
        return race_task(posts["post"], posts["offensive"] >= offensive_threshold, "sbic")
    if task == "bios_gender":
        b = biasbios.load_samples(raw_dir)
        return profession_task(b, "bias_in_bios_samples")
    if task == "genderqa_topic":
        return genderqa_topic_task(raw_dir, min_topic_questions)
    if task in ("jigsaw_race", "biasbios_full"):
        if not full_data:
            raise ValueError(f"cscl task {task!r} reads the paper's full data: set cscl.full_data to its file "
                             "(Civil Comments train.csv / all_data_with_identities.csv, or BIOS.pkl / a LabHC export)")
        if task == "biasbios_full":
            return profession_task(biasbios.load_records(full_data), Path(full_data).name)
        cc = jigsaw.load_civil_comments(full_data)
        race = [c for c in ("black", "white", "asian", "latino", "other_race_or_ethnicity") if c in cc.columns]
        if "black" not in race:
            raise ValueError(f"{full_data}: no 'black' identity column, needed for the paper's black / non-black split")
        cc = cc[cc[race].any(axis=1)]  # App. B.1: the comments with a race or ethnicity identity label
        return _frame(cc["text"], cc["toxic"], cc["black"], TOXIC, RACE, Path(full_data).name)
    raise ValueError(f"unknown cscl task {task!r}: choose from {list(TASKS)}")


def profession_task(bios: pd.DataFrame, source: str) -> pd.DataFrame:
    """y = profession (class ids in alphabetical order), a = gender (1 = female)."""
    names = sorted(bios["profession"].unique())
    ids = {n: i for i, n in enumerate(names)}
    return _frame(bios["text"], bios["profession"].map(ids), (bios["gender"] == "female").astype(int),
                  dict(enumerate(names)), {0: "male", 1: "female"}, source)


def genderqa_topic_task(raw_dir: str | Path, min_questions: int) -> pd.DataFrame:
    """GenderBias-QA train + test passages: y = topic, a = gender of the passage's subject, group = question."""
    from ..data import kim2025

    qa = pd.concat([kim2025.load_genderbias_qa(s, raw_dir).assign(part=s) for s in ("train", "test")],
                   ignore_index=True)
    counts = qa["topic"].value_counts()
    topics = sorted(counts.index[counts >= min_questions])
    if len(topics) < 2:
        raise ValueError(f"cscl.min_topic_questions = {min_questions} keeps {len(topics)} GenderBias-QA topic(s) "
                         f"(largest: {counts.head(3).to_dict()}); lower it")
    qa = qa[qa["topic"].isin(topics)]
    ids = {t: i for i, t in enumerate(topics)}
    long = qa.melt(id_vars=["num", "topic", "part"], value_vars=["female_doc1", "female_doc2", "male_doc1",
                                                                 "male_doc2"], var_name="doc", value_name="text")
    return _frame(long["text"], long["topic"].map(ids), long["doc"].str.startswith("female").astype(int),
                  dict(enumerate(topics)), {0: "male", 1: "female"}, "GenderBias-QA corpus",
                  group=long["part"] + "-" + long["num"].astype(str))


def subsample(task: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """A seeded sample of ``n`` rows stratified by (y, a) (every row when ``n`` is 0 or not smaller)."""
    from sklearn.model_selection import train_test_split

    if not n or n >= len(task):
        return task
    cell = task["y"].astype(str) + "|" + task["a"].astype(str)
    strat = cell if cell.value_counts().min() >= 2 else None
    keep, _ = train_test_split(np.arange(len(task)), train_size=n, random_state=seed, stratify=strat)
    return task.iloc[np.sort(keep)].reset_index(drop=True)


def split(task: pd.DataFrame, *, val: float, test: float, seed: int) -> pd.DataFrame:
    """``task`` with a ``split`` column (train / val / test), seeded and stratified by (y, a). A (y, a) cell too
    small to be stratified (fewer than 3 rows) is put in train. With a ``group`` column, whole groups are assigned
    (stratified by y; a group's rows share one y). Raises a ValueError naming the cell sizes and the fix when the
    shares cannot be met."""
    if not (0 < val < 1 and 0 < test < 1 and val + test < 1):
        raise ValueError(f"cscl.splits: val ({val}) and test ({test}) must be in (0, 1) with val + test < 1")
    out = task.copy()
    if "group" in task.columns:
        units = task.drop_duplicates("group")
        if (task.groupby("group")["y"].nunique() > 1).any():
            raise ValueError("cscl split: a group's rows have different y; groups must share one task label")
        part = dict(zip(units["group"], _assign(units["y"].astype(str), val, test, seed, len(task)), strict=True))
        out["split"] = task["group"].map(part)
    else:
        out["split"] = _assign(task["y"].astype(str) + "|" + task["a"].astype(str), val, test, seed, len(task))
    check_no_leakage(out)
    return out


def _assign(cell: pd.Series, val: float, test: float, seed: int, n_rows: int) -> np.ndarray:
    """train / val / test per unit, stratified by ``cell``; cells under 3 units stay in train."""
    from sklearn.model_selection import train_test_split

    counts = cell.value_counts()
    small = cell.isin(counts.index[counts < 3])
    rest = np.arange(len(cell))[~small.to_numpy()]  # units of cells too small to stratify stay in train
    try:
        _, held = train_test_split(rest, test_size=val + test, random_state=seed, stratify=cell.iloc[rest])
        v, t = _split_held(held, cell.iloc[held], test / (val + test), seed)
    except ValueError as err:
        raise ValueError(f"cannot split {n_rows} rows with cells {counts.to_dict()} into val {val} / "
                         f"test {test} ({err}); use more data or larger shares") from None
    out = np.full(len(cell), "train", dtype=object)
    out[v], out[t] = "val", "test"
    return out


def _split_held(held: np.ndarray, cell: pd.Series, test_share: float, seed: int):
    """Validation / test from the held-out units: stratified when every cell can be, else a plain seeded split (many
    small classes: fewer validation units than classes)."""
    from sklearn.model_selection import train_test_split

    if cell.value_counts().min() >= 2:
        try:
            return train_test_split(held, test_size=test_share, random_state=seed, stratify=cell)
        except ValueError:
            pass
    return train_test_split(held, test_size=test_share, random_state=seed)


def check_no_leakage(rows: pd.DataFrame) -> None:
    """No text (compared case- and space-insensitively), and no ``group`` when there is one, in two of train / val /
    test."""
    key = rows["text"].str.lower().str.split().str.join(" ")
    parts = rows.assign(_key=key).groupby("_key")["split"].nunique()
    bad = parts[parts > 1]
    if len(bad):
        raise AssertionError(f"{len(bad)} texts are in more than one split, e.g. {bad.index[0][:80]!r}")
    if "group" in rows.columns:
        parts = rows.groupby("group")["split"].nunique()
        if (parts > 1).any():
            raise AssertionError(f"group {parts[parts > 1].index[0]!r} is in more than one split")


def sizes(rows: pd.DataFrame, task: str) -> pd.DataFrame:
    """Rows, share of a = 1 and of y = 1 (binary tasks) per split, beside the paper's sizes where it has them."""
    paper = PAPER_SIZES.get(task, {})
    out = []
    for name in ("train", "val", "test"):
        part = rows[rows["split"] == name]
        out.append({"split": name, "rows": len(part), "a=1 share": round(float(part["a"].mean()), 3) if len(part) else None,
                    "y classes": int(part["y"].nunique()),
                    "y=1 share": round(float((part["y"] == 1).mean()), 3) if rows["y"].nunique() == 2 and len(part) else None,
                    "paper rows": paper.get(name)})
    return pd.DataFrame(out)
