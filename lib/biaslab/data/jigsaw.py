"""Toxicity × identity data for cscl (Chi et al. 2022 use Jigsaw / Civil Comments, race: black vs non-black).

* :func:`load_civil_comments` reads the official formats a user may have — the Kaggle "Jigsaw Unintended Bias"
  ``train.csv`` (``comment_text``, ``target``, 24 identity columns) or WILDS / TFDS ``all_data_with_identities.csv``
  (``comment_text``, ``toxicity``, the same identity columns, ``split``) — from any path.
* Offline, the Dixon et al. (2018) identity-term test sets in ``data/raw/jigsaw_identity_term_bias_testsets``:
  :func:`load_madlibs` (templated sentences with an identity term, BAD / NOT_BAD) and :func:`load_wiki_testset`
  (real Wikipedia talk comments that mention an identity term, and their "fuzzed" copies).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ._schema import DataError, dataset_dir, read_csv, require_allowed, require_columns, require_values

DATASET = "jigsaw_identity_term_bias_testsets"
MADLIBS = "bias_madlibs_77k.csv"
WIKI = {False: "toxicity_nonfuzzed_testset.csv", True: "toxicity_fuzzed_testset.csv"}
IDENTITY_COLUMNS = (
    "male", "female", "transgender", "other_gender", "heterosexual", "homosexual_gay_or_lesbian", "bisexual",
    "other_sexual_orientation", "christian", "jewish", "muslim", "hindu", "buddhist", "atheist", "other_religion",
    "black", "white", "asian", "latino", "other_race_or_ethnicity", "physical_disability",
    "intellectual_or_learning_disability", "psychiatric_or_mental_illness", "other_disability")


def load_madlibs(raw_dir: str | Path) -> pd.DataFrame:
    """``text``, ``toxic`` (bool: Label == BAD), ``template`` — one row per templated sentence."""
    path = dataset_dir(DATASET, raw_dir) / MADLIBS
    df = read_csv(path, DATASET)
    require_columns(df, ("Text", "Label", "Template"), path, DATASET)
    require_values(df, ["Text"], path, DATASET)
    require_allowed(df, "Label", ("BAD", "NOT_BAD"), path, DATASET)
    return pd.DataFrame({"text": df["Text"].astype(str).str.strip(), "toxic": (df["Label"] == "BAD").to_numpy(),
                         "template": df["Template"].astype(str)})


def load_wiki_testset(raw_dir: str | Path, fuzzed: bool = False) -> pd.DataFrame:
    """``rev_id``, ``text``, ``toxic`` (bool) — the non-fuzzed (real) or fuzzed Wikipedia talk comments."""
    path = dataset_dir(DATASET, raw_dir) / WIKI[bool(fuzzed)]
    df = read_csv(path, DATASET)
    require_columns(df, ("rev_id", "comment", "toxic"), path, DATASET)
    require_values(df, ["comment"], path, DATASET)
    toxic = df["toxic"].astype(str).str.strip().str.lower()
    df = df.assign(toxic=toxic)
    require_allowed(df, "toxic", ("true", "false"), path, DATASET)
    return pd.DataFrame({"rev_id": df["rev_id"].astype(str), "text": df["comment"].astype(str).str.strip(),
                         "toxic": (toxic == "true").to_numpy()})


def load_civil_comments(path: str | Path, identity_threshold: float = 0.5,
                        toxicity_threshold: float = 0.5) -> pd.DataFrame:
    """A Civil Comments file in one of its official layouts (see the module docstring): ``text``, ``toxicity``
    (annotator share), ``toxic`` (share ≥ ``toxicity_threshold``, the public code's 0.5), one boolean column per
    identity present in the file (share ≥ ``identity_threshold``; rows nobody annotated for identities are
    False) and ``split`` when the file has one. The error names the file and the missing columns."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found — point cscl.data at a Civil Comments train.csv or "
                        "all_data_with_identities.csv (Kaggle 'Jigsaw Unintended Bias in Toxicity Classification', "
                        "WILDS civilcomments)")
    df = read_csv(path, "civil_comments")
    score = "target" if "target" in df.columns else "toxicity"
    require_columns(df, ("comment_text", score), path, "civil_comments")
    present = [c for c in IDENTITY_COLUMNS if c in df.columns]
    if not present:
        raise DataError(f"{path}: no identity column ({', '.join(IDENTITY_COLUMNS[:4])}, ...): this is not the "
                        "identity-annotated release (use train.csv of the Kaggle competition or WILDS' "
                        "all_data_with_identities.csv)")
    tox = pd.to_numeric(df[score], errors="coerce")
    if tox.isna().any():
        row = int(tox.isna().to_numpy().nonzero()[0][0]) + 2
        raise DataError(f"{path}: row {row}: column {score!r} is not a number")
    out = pd.DataFrame({"text": df["comment_text"].astype(str).str.strip(), "toxicity": tox.to_numpy(),
                        "toxic": (tox >= toxicity_threshold).to_numpy()})
    for c in present:
        out[c] = (pd.to_numeric(df[c], errors="coerce").fillna(0.0) >= identity_threshold).to_numpy()
    if "split" in df.columns:
        out["split"] = df["split"].astype(str).to_numpy()
    return out


def validate(raw_dir: str | Path) -> dict[str, int]:
    """Rows per file of the identity-term test sets (each file read through its schema check)."""
    return {MADLIBS: len(load_madlibs(raw_dir)), **{WIKI[f]: len(load_wiki_testset(raw_dir, f)) for f in (False, True)}}
