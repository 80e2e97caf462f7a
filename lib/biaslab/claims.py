"""A paper's claims as verdicts computed from the data: ``reports/<paper>/results/claims.csv``.

Each claim is checked by a rule on our estimate and its confidence interval (:class:`biaslab.stats.Estimate`), never
typed by hand:

* :func:`direction` — "X is larger than Y" (or smaller): **reproduced** when the interval of our effect lies
  entirely on the paper's side of ``null`` (0 for a difference), **contradicted** when it lies entirely on the other
  side, **inconclusive** when it covers ``null``.
* :func:`negligible` — "X does not change Y": **reproduced** when the interval lies within ±``bound`` (an
  equivalence test), **contradicted** when it lies entirely outside ±``bound``, **inconclusive** otherwise.
* :func:`close_to` — "X is about v": **reproduced** when v lies in the interval widened by ``tolerance``,
  **contradicted** when it lies outside, **inconclusive** when the interval is wider than ``max_width`` (it would
  hold almost any value) or missing.

The table keeps the paper's value (a number or a short phrase), ours, the interval, the verdict and the rule that
produced it, so a reader can recompute every verdict from the row.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from .stats import Estimate

VERDICTS = ("reproduced", "contradicted", "inconclusive")
COLUMNS = ["claim", "paper_section", "paper_value", "our_value", "ci_low", "ci_high", "verdict", "rule"]


@dataclass(frozen=True)
class Claim:
    claim: str
    paper_section: str
    paper_value: str
    our_value: float
    ci_low: float
    ci_high: float
    verdict: str
    rule: str


def _finite(est: Estimate) -> bool:
    return all(math.isfinite(v) for v in (est.ci_low, est.ci_high))


def direction(claim: str, section: str, paper_value, est: Estimate, *, expected: str, null: float = 0.0) -> Claim:
    """``expected``: ``greater`` (the paper says our quantity exceeds ``null``) or ``less``."""
    if expected not in ("greater", "less"):
        raise ValueError(f"expected must be greater or less, got {expected!r}")
    if not _finite(est):
        verdict = "inconclusive"
    elif est.ci_low > null:
        verdict = "reproduced" if expected == "greater" else "contradicted"
    elif est.ci_high < null:
        verdict = "reproduced" if expected == "less" else "contradicted"
    else:
        verdict = "inconclusive"
    op = ">" if expected == "greater" else "<"
    return Claim(claim, section, str(paper_value), est.value, est.ci_low, est.ci_high, verdict,
                 f"direction: CI {op} {null:g} reproduces, CI on the other side contradicts, CI covering {null:g} is "
                 f"inconclusive ({est.method}, n={est.n})")


def negligible(claim: str, section: str, paper_value, est: Estimate, *, bound: float) -> Claim:
    if bound <= 0:
        raise ValueError(f"the equivalence bound must be > 0, got {bound}")
    if not _finite(est):
        verdict = "inconclusive"
    elif -bound <= est.ci_low and est.ci_high <= bound:
        verdict = "reproduced"
    elif est.ci_low > bound or est.ci_high < -bound:
        verdict = "contradicted"
    else:
        verdict = "inconclusive"
    return Claim(claim, section, str(paper_value), est.value, est.ci_low, est.ci_high, verdict,
                 f"negligible: CI within ±{bound:g} reproduces, CI entirely beyond ±{bound:g} contradicts "
                 f"({est.method}, n={est.n})")


def close_to(claim: str, section: str, paper_value: float, est: Estimate, *, tolerance: float,
             max_width: float) -> Claim:
    if not _finite(est) or est.ci_high - est.ci_low > max_width:
        verdict = "inconclusive"
    elif est.ci_low - tolerance <= paper_value <= est.ci_high + tolerance:
        verdict = "reproduced"
    else:
        verdict = "contradicted"
    return Claim(claim, section, f"{paper_value:g}", est.value, est.ci_low, est.ci_high, verdict,
                 f"close to the paper: its value within CI ± {tolerance:g} reproduces, outside contradicts; a CI wider "
                 f"than {max_width:g} is inconclusive ({est.method}, n={est.n})")


def table(claims: list[Claim]) -> pd.DataFrame:
    bad = [c.verdict for c in claims if c.verdict not in VERDICTS]
    if bad:
        raise ValueError(f"unknown verdicts {bad}")
    return pd.DataFrame([asdict(c) for c in claims], columns=COLUMNS)


def write(path: str | Path, claims: list[Claim]) -> pd.DataFrame:
    from .io import write_csv

    out = table(claims)
    write_csv(path, out)
    return out


def summary(df: pd.DataFrame) -> dict[str, int]:
    """Verdict counts, for metrics.json and the README."""
    return {v: int((df["verdict"] == v).sum()) for v in VERDICTS}


def _fmt(x) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.3g}"


def markdown(df: pd.DataFrame) -> str:
    """The claims table as Markdown (claim, paper section, paper's value, ours with its interval, verdict), verdict
    counts first — what ``biaslab claims`` prints for the README."""
    counts = summary(df)
    lines = [", ".join(f"{n} {v}" for v, n in counts.items()), "",
             "| claim | section | paper | ours [CI] | verdict |", "|---|---|---|---|---|"]
    for r in df.itertuples(index=False):
        ours = f"{_fmt(r.our_value)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]"
        lines.append(f"| {r.claim} | {r.paper_section} | {r.paper_value} | {ours} | **{r.verdict}** |")
    return "\n".join(lines)


def read(path: str | Path) -> pd.DataFrame:
    """A claims.csv, checked: the columns of :data:`COLUMNS` and known verdicts only."""
    df = pd.read_csv(path)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {COLUMNS} (written by biaslab.claims.write)")
    return table([Claim(**{c: r[c] for c in COLUMNS}) for r in df.to_dict("records")])

