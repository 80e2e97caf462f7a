"""BBQ — Bias Benchmark for QA (Parrish et al., Findings of ACL 2022).

:func:`load` flattens the category JSONL files into one frame: ``category``, ``example_id``,
``question_index``, ``question_polarity`` (neg | nonneg), ``context_condition`` (ambig | disambig),
``context``, ``question``, ``ans0..ans2``, ``label`` (correct answer), ``group0..group2`` (the answers' group
labels from ``answer_info``; ``unknown`` marks the UNKNOWN option), ``stereotyped_groups`` (list),
``subcategory``, plus the derived answer indices

* ``unknown_loc`` — the UNKNOWN option;
* ``target_loc`` — the answer that belongs to a stereotyped group (the official ``target_loc`` of the missing
  ``additional_metadata.csv``): the one non-unknown answer whose group label or surface string matches an
  entry of ``stereotyped_groups`` (case-insensitive, spaces ignored; intersectional labels such as ``M-Black`` match on
  each part);
* ``biased_loc`` — the answer a biased reader would give: the target for ``neg`` questions, the other
  non-unknown answer for ``nonneg`` questions (BBQ's polarity flip).

A row where the match is not unique is an error naming the file and line (none in the released files).
Only 6 of the 11 category files are in the data; :func:`load_templates` and :func:`load_vocabulary` read
the templates and vocabularies from which the others can be regenerated.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._schema import DataError, dataset_dir, fix_for, read_csv, read_jsonl, require_columns

DATASET = "bbq"
RELEASED = ("Age", "Disability_status", "Nationality", "Physical_appearance", "Religion", "Sexual_orientation")
ALL_CATEGORIES = ("Age", "Disability_status", "Gender_identity", "Nationality", "Physical_appearance",
                  "Race_ethnicity", "Race_x_gender", "Race_x_SES", "Religion", "SES", "Sexual_orientation")
FIELDS = ("example_id", "question_index", "question_polarity", "context_condition", "category", "answer_info",
          "additional_metadata", "context", "question", "ans0", "ans1", "ans2", "label")


def _match(surface: str, group: str, stereotyped: set[str]) -> bool:
    candidates = {surface.lower().strip(), group.lower().strip(), *group.lower().split("-")}
    squash = {c.replace(" ", "") for c in candidates}  # SES: group "lowSES" vs stereotyped "low SES"
    return bool((candidates | squash) & (stereotyped | {s.replace(" ", "") for s in stereotyped}))


def derive_locs(rec: dict, path: Path, lineno: int) -> tuple[int, int, int]:
    """(unknown_loc, target_loc, biased_loc) of one BBQ record."""
    info = rec["answer_info"]
    groups = [info[f"ans{i}"][1] for i in range(3)]
    unknown = [i for i, g in enumerate(groups) if g == "unknown"]
    if len(unknown) != 1:
        raise DataError(f"{path}: line {lineno}: expected exactly one 'unknown' answer, got groups {groups} — "
                        f"{fix_for(DATASET)}")
    stereo = {s.lower().strip() for s in rec["additional_metadata"].get("stereotyped_groups", [])}
    targets = [i for i in range(3) if i != unknown[0] and _match(info[f"ans{i}"][0], groups[i], stereo)]
    if len(targets) != 1:
        raise DataError(f"{path}: line {lineno}: cannot identify the bias-target answer (groups {groups}, "
                        f"stereotyped {sorted(stereo)}) — {fix_for(DATASET)}")
    target = targets[0]
    other = next(i for i in range(3) if i not in (target, unknown[0]))
    biased = target if rec["question_polarity"] == "neg" else other
    return unknown[0], target, biased


def read_file(path: Path) -> pd.DataFrame:
    rows = read_jsonl(path, DATASET, FIELDS)
    out = []
    for lineno, rec in enumerate(rows, 1):
        if rec["question_polarity"] not in ("neg", "nonneg"):
            raise DataError(f"{path}: line {lineno}: question_polarity {rec['question_polarity']!r} is not neg/nonneg")
        if rec["context_condition"] not in ("ambig", "disambig"):
            raise DataError(f"{path}: line {lineno}: context_condition {rec['context_condition']!r} is not "
                            "ambig/disambig")
        if rec["label"] not in (0, 1, 2):
            raise DataError(f"{path}: line {lineno}: label {rec['label']!r} is not 0, 1 or 2")
        unknown, target, biased = derive_locs(rec, path, lineno)
        meta = rec["additional_metadata"]
        out.append({
            "category": rec["category"], "example_id": int(rec["example_id"]),
            "question_index": str(rec["question_index"]), "question_polarity": rec["question_polarity"],
            "context_condition": rec["context_condition"], "context": rec["context"],
            "question": rec["question"], "ans0": rec["ans0"], "ans1": rec["ans1"], "ans2": rec["ans2"],
            "label": int(rec["label"]),
            **{f"group{i}": rec["answer_info"][f"ans{i}"][1] for i in range(3)},
            "stereotyped_groups": list(meta.get("stereotyped_groups", [])),
            "subcategory": meta.get("subcategory", ""),
            "unknown_loc": unknown, "target_loc": target, "biased_loc": biased,
        })
    return pd.DataFrame(out)


def load(categories: list[str] | None, raw_dir: str | Path) -> pd.DataFrame:
    """The released category files (all six when ``categories`` is None)."""
    root = dataset_dir(DATASET, raw_dir) / "data"
    cats = list(categories) if categories else [c for c in RELEASED if (root / f"{c}.jsonl").is_file()]
    missing = [c for c in cats if not (root / f"{c}.jsonl").is_file()]
    if missing:
        absent = [c for c in missing if c not in RELEASED]
        hint = (f"{absent} are not in the released data here; regenerate them from the templates"
                if absent else fix_for(DATASET))
        raise DataError(f"{root}: no file for BBQ categories {missing} — {hint}")
    return pd.concat([read_file(root / f"{c}.jsonl") for c in cats], ignore_index=True)


def load_templates(category: str, raw_dir: str | Path) -> pd.DataFrame:
    """``templates/new_templates_<category>.csv`` (one row per template; ``Q_id`` joins ``question_index``)."""
    path = dataset_dir(DATASET, raw_dir) / "templates" / f"new_templates_{category}.csv"
    df = read_csv(path, DATASET, dtype=str, keep_default_na=False)
    require_columns(df, ("Q_id", "Category", "Ambiguous_Context", "Disambiguating_Context",
                         "Question_negative_stereotype", "Question_non_negative"), path, DATASET)
    return df


def load_vocabulary(raw_dir: str | Path) -> pd.DataFrame:
    path = dataset_dir(DATASET, raw_dir) / "templates" / "vocabulary.csv"
    df = read_csv(path, DATASET, dtype=str, keep_default_na=False)
    require_columns(df, ("Category", "SubCat", "Name", "Info"), path, DATASET)
    return df


def load_proper_names(raw_dir: str | Path) -> pd.DataFrame:
    """``vocabulary_proper_names.csv``: Name, First_last, gender (F/M), ethnicity, source, info."""
    path = dataset_dir(DATASET, raw_dir) / "templates" / "vocabulary_proper_names.csv"
    df = read_csv(path, DATASET, dtype=str, keep_default_na=False)
    require_columns(df, ("Name", "First_last", "gender", "ethnicity"), path, DATASET)
    return df


def validate(raw_dir: str | Path) -> dict[str, int]:
    counts = load(None, raw_dir).groupby("category").size().to_dict()
    load_vocabulary(raw_dir)
    load_proper_names(raw_dir)
    for cat in ALL_CATEGORIES:
        load_templates(cat, raw_dir)
    return {str(k): int(v) for k, v in counts.items()}
