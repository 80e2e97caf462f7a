"""Bias in Bios (De-Arteaga et al. 2019): biographies with a profession (28 classes) and a binary gender.

* :func:`load_samples` — the real sample in ``data/raw/bias_in_bios_samples`` (280 bios, 10 per profession, plus
  1,000 accountant bios), the offline stand-in.
* :func:`load_records` — the full data in its official layouts, from any path: the INLP / cscl pickles
  (``BIOS.pkl``, ``train.pickle`` …: a list of dicts with ``hard_text`` or ``hard_text_untokenized``, ``p``
  profession, ``g`` ``m`` / ``f``), or a Hugging Face ``LabHC/bias_in_bios`` parquet / CSV export (``hard_text``,
  ``profession`` as a name or a class id, ``gender`` 0 = male, 1 = female).

Every loader returns ``text``, ``profession`` (a name) and ``gender`` (``male`` / ``female``).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pandas as pd

from ._schema import DataError, dataset_dir, read_csv, require_allowed, require_columns, require_values

DATASET = "bias_in_bios_samples"
FILES = {"28_professions": "bios_samples_28_professions.csv", "accountant": "accountant_complete.csv"}
# LabHC/bias_in_bios class ids, in its order
PROFESSIONS = ("accountant", "architect", "attorney", "chiropractor", "comedian", "composer", "dentist", "dietitian",
               "dj", "filmmaker", "interior_designer", "journalist", "model", "nurse", "painter", "paralegal",
               "pastor", "personal_trainer", "photographer", "physician", "poet", "professor", "psychologist",
               "rapper", "software_engineer", "surgeon", "teacher", "yoga_teacher")
GENDERS = {"Male": "male", "Female": "female", "m": "male", "f": "female", 0: "male", 1: "female"}


def load_samples(raw_dir: str | Path, files: tuple[str, ...] = ("28_professions", "accountant")) -> pd.DataFrame:
    """The sample files (keys of :data:`FILES`) concatenated, duplicates of the same bio dropped."""
    frames = []
    for key in files:
        if key not in FILES:
            raise ValueError(f"unknown Bias in Bios sample {key!r}: choose from {sorted(FILES)}")
        path = dataset_dir(DATASET, raw_dir) / FILES[key]
        df = read_csv(path, DATASET)
        require_columns(df, ("hard_text", "profession", "gender"), path, DATASET)
        require_values(df, ["hard_text", "profession"], path, DATASET)
        require_allowed(df, "gender", ("Male", "Female"), path, DATASET)
        require_allowed(df, "profession", PROFESSIONS, path, DATASET)
        frames.append(pd.DataFrame({"text": df["hard_text"].astype(str).str.strip(), "profession": df["profession"],
                                    "gender": df["gender"].map(GENDERS)}))
    return pd.concat(frames, ignore_index=True).drop_duplicates("text").reset_index(drop=True)


def load_records(path: str | Path) -> pd.DataFrame:
    """The full data set from a pickle of records or a LabHC export (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found — point cscl.data at BIOS.pkl (microsoft/biosbias), the INLP "
                        "pickles or a LabHC/bias_in_bios parquet / CSV export")
    if path.suffix in (".pkl", ".pickle"):
        with open(path, "rb") as fh:
            records = pickle.load(fh)  # the official release is a pickle: only open files you trust
        if not isinstance(records, list) or not records or not isinstance(records[0], dict):
            raise DataError(f"{path}: expected a non-empty list of bio records (dicts with hard_text, p, g)")
        df = pd.DataFrame.from_records(records)
        text = "hard_text_untokenized" if "hard_text_untokenized" in df.columns else "hard_text"
        require_columns(df, (text, "p", "g"), path, "bias_in_bios")
        df = df.rename(columns={text: "text", "p": "profession", "g": "gender"})
    else:
        df = pd.read_parquet(path) if path.suffix == ".parquet" else read_csv(path, "bias_in_bios")
        require_columns(df, ("hard_text", "profession", "gender"), path, "bias_in_bios")
        df = df.rename(columns={"hard_text": "text"})
        if pd.api.types.is_integer_dtype(df["profession"]):
            bad = ~df["profession"].between(0, len(PROFESSIONS) - 1)
            if bad.any():
                raise DataError(f"{path}: row {int(bad.to_numpy().nonzero()[0][0])}: profession id outside "
                                f"0-{len(PROFESSIONS) - 1}")
            df["profession"] = df["profession"].map(dict(enumerate(PROFESSIONS)))
    gender = df["gender"].map(GENDERS)
    if gender.isna().any():
        row = int(gender.isna().to_numpy().nonzero()[0][0])
        raise DataError(f"{path}: record {row}: gender {str(df['gender'].iloc[row])!r} is not one of m / f, Male / "
                        "Female or 0 / 1")
    return pd.DataFrame({"text": df["text"].astype(str).str.strip(), "profession": df["profession"].astype(str),
                         "gender": gender})


def validate(raw_dir: str | Path) -> dict[str, int]:
    """Rows per sample file (each read through its schema check)."""
    return {FILES[k]: len(load_samples(raw_dir, (k,))) for k in FILES}
