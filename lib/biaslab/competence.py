"""A paper's competence table (``reports/<paper>/results/competence.csv``): does each baseline do its own task well
enough that a comparison against it means something? A claim whose baseline fails its floor gets the verdict
``untestable`` (:func:`biaslab.claims.finalize`), never reproduced, ruled out or contradicted.

Columns ``check, measure, ours, ci_low, ci_high, floor, passed``. The floors are fixed before the results and argued
in ``docs/<paper>.md``; a "beats X" check passes only when its paired interval lies above the floor.
"""

from __future__ import annotations

import math

import pandas as pd

from .claims import NAN, Evidence

COLUMNS = ["check", "measure", "ours", "ci_low", "ci_high", "floor", "passed"]


def table(rows: list[dict]) -> pd.DataFrame:
    """The competence table of ``rows`` (:func:`beats`, :func:`at_least`), checked."""
    df = pd.DataFrame(rows, columns=COLUMNS)
    if df["check"].duplicated().any():
        raise ValueError(f"competence checks named twice: {sorted(df.loc[df['check'].duplicated(), 'check'])}")
    return df.assign(passed=df["passed"].astype(bool))


def beats(check: str, measure: str, evidence: Evidence, *, floor: float = 0.0, level: float) -> dict:
    """A competence row "our model beats the reference on ``measure``": the paired difference and its t interval;
    passed when the interval's lower bound clears ``floor``."""
    low, high = evidence.interval(level)
    return {"check": check, "measure": measure, "ours": evidence.value, "ci_low": low, "ci_high": high,
            "floor": floor, "passed": bool(math.isfinite(low) and low > floor)}


def at_least(check: str, measure: str, value: float, *, floor: float, ci: tuple[float, float] = (NAN, NAN)) -> dict:
    """A competence row "``value`` reaches ``floor``" (e.g. the paper's effect at our base value against our MDE)."""
    return {"check": check, "measure": measure, "ours": value, "ci_low": ci[0], "ci_high": ci[1], "floor": floor,
            "passed": bool(math.isfinite(value) and math.isfinite(floor) and value >= floor)}


def at_most(check: str, measure: str, value: float, *, floor: float) -> dict:
    """A competence row "``value`` stays below ``floor``" (e.g. the share of rows a classifier gives one class)."""
    return {"check": check, "measure": measure, "ours": value, "ci_low": NAN, "ci_high": NAN, "floor": floor,
            "passed": bool(math.isfinite(value) and value < floor)}


def read(path) -> pd.DataFrame:
    """A competence.csv, checked: its columns, a boolean ``passed``."""
    df = pd.read_csv(path)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {COLUMNS} (written by biaslab.competence)")
    return table(df.to_dict("records"))
