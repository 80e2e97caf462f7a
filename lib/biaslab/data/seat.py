"""SEAT / WEAT association tests (May et al., 2019; Caliskan et al., 2017; bias-bench religion tests).

Each file holds ONE JSON object (despite the ``.jsonl`` extension) with four sets: ``targ1`` / ``targ2``
(targets X, Y) and ``attr1`` / ``attr2`` (attributes A, B), each ``{"category": str, "examples": [str]}``.
Tests are named by file stem (``weat6``, ``sent-weat6``, ``sent-religion1``, ...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ._schema import DataError, dataset_dir, fix_for, require_file

DATASET = "seat"
FOLDERS = ("sent-bias_tests", "bias-bench_extra")
KEYS = ("targ1", "targ2", "attr1", "attr2")


@dataclass(frozen=True)
class WordSet:
    category: str
    examples: tuple[str, ...]


@dataclass(frozen=True)
class SeatTest:
    name: str
    X: WordSet
    Y: WordSet
    A: WordSet
    B: WordSet

    @property
    def level(self) -> str:
        return "sentence" if self.name.startswith("sent-") else "word"

    def texts(self) -> list[str]:
        return [*self.X.examples, *self.Y.examples, *self.A.examples, *self.B.examples]


def load_test(path: Path) -> SeatTest:
    require_file(path, DATASET)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: not valid JSON (line {err.lineno}: {err.msg}) — {fix_for(DATASET)}") from None
    sets = []
    for key in KEYS:
        part = obj.get(key) if isinstance(obj, dict) else None
        if not isinstance(part, dict) or "examples" not in part or "category" not in part:
            raise DataError(f"{path}: missing {key!r} with 'category' and 'examples' — {fix_for(DATASET)}")
        ex = part["examples"]
        if not isinstance(ex, list) or not ex or not all(isinstance(e, str) and e.strip() for e in ex):
            raise DataError(f"{path}: {key}.examples must be a non-empty list of non-empty strings — "
                            f"{fix_for(DATASET)}")
        sets.append(WordSet(str(part["category"]), tuple(ex)))
    return SeatTest(path.stem, *sets)


def available(raw_dir: str | Path) -> dict[str, Path]:
    """Test name -> file, for every SEAT/WEAT test in the data (sorted by name)."""
    root = dataset_dir(DATASET, raw_dir)
    found = {p.stem: p for folder in FOLDERS for p in sorted((root / folder).glob("*.jsonl"))}
    if not found:
        raise DataError(f"{root}: no SEAT test files under {list(FOLDERS)} — {fix_for(DATASET)}")
    return dict(sorted(found.items()))


def load_tests(names: list[str] | None, raw_dir: str | Path) -> list[SeatTest]:
    """The named tests (all when ``names`` is empty or None)."""
    files = available(raw_dir)
    if names:
        unknown = [n for n in names if n not in files]
        if unknown:
            raise DataError(f"unknown SEAT test(s) {unknown}; available: {', '.join(files)}")
        files = {n: files[n] for n in names}
    return [load_test(p) for p in files.values()]


def load_attribute_words(raw_dir: str | Path) -> dict[str, list[list[str]]]:
    """bias-bench's counterfactual attribute words: {"gender": [[male, female], ...], "religion": ..., "race": ...}."""
    path = require_file(dataset_dir(DATASET, raw_dir) / "bias-bench_extra" / "bias_attribute_words.json", DATASET)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: not valid JSON ({err.msg}) — {fix_for(DATASET)}") from None
    if not isinstance(obj, dict) or "gender" not in obj:
        raise DataError(f"{path}: expected a mapping with a 'gender' list — {fix_for(DATASET)}")
    return obj


def validate(raw_dir: str | Path) -> dict[str, int]:
    tests = load_tests(None, raw_dir)
    load_attribute_words(raw_dir)
    return {"tests": len(tests)}
