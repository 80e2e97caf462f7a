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

:func:`verdict` is the magnitude-aware rule (equivalence and "small telescopes" reasoning): beyond the sign it says
whether our interval reaches the paper's effect, stops short of it, or rules an effect as large as the paper's out.

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


# what :func:`verdict` returns (the claims tables move to these when they are rebuilt with the paper's effects)
MAGNITUDE_VERDICTS = ("reproduced", "reproduced_smaller", "ruled_out", "contradicted", "underpowered", "untestable")


def verdict(ci_low: float, ci_high: float, *, paper_effect: float | None = None, null: float = 0.0,
            direction: int = 1, bound: float | None = None) -> str:
    """The verdict on a claim from our interval [``ci_low``, ``ci_high``] of the effect (our units).

    A claim of an effect: ``direction`` +1 when the paper's effect is an increase over ``null``, −1 a decrease;
    ``paper_effect`` the paper's effect in our units (None when the paper gives no size). Then

    * ``reproduced`` — the interval excludes ``null`` on the paper's side and is consistent with, or beyond, the
      paper's effect (it reaches ``paper_effect``; any such interval without a paper effect);
    * ``reproduced_smaller`` — it excludes ``null`` on the paper's side but lies wholly between ``null`` and the
      paper's effect: the effect is there, smaller than the paper's;
    * ``ruled_out`` — it includes ``null`` but excludes the paper's effect: an effect as large as the paper's is
      ruled out at our size (Simonsohn's "small telescopes": the paper's effect is not what we see);
    * ``contradicted`` — it excludes ``null`` on the other side;
    * ``underpowered`` — it includes both ``null`` and the paper's effect (or includes ``null`` and the paper gives
      no size): our data cannot tell.

    A claim of *no change* (``bound`` = b > 0, the paper's own tolerance or one argued in the docs, never tuned to
    the result): ``reproduced`` when the interval lies inside (null − b, null + b) — an equivalence test —,
    ``contradicted`` when it lies wholly outside, else ``underpowered``.

    A missing bound of the interval (NaN) gives ``untestable``."""
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 (the paper reports an increase) or -1 (a decrease), got {direction}")
    if not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return "untestable"
    if ci_low > ci_high:
        raise ValueError(f"the interval [{ci_low}, {ci_high}] has its bounds the wrong way round")
    if bound is not None:
        if paper_effect is not None:
            raise ValueError("a claim of no change (bound) has no paper effect; give one or the other")
        if not bound > 0:
            raise ValueError(f"the equivalence bound must be > 0, got {bound}")
        if null - bound < ci_low and ci_high < null + bound:
            return "reproduced"
        if ci_low >= null + bound or ci_high <= null - bound:
            return "contradicted"
        return "underpowered"
    # along the paper's direction: low and high of the effect, with the null at 0
    low, high = sorted((direction * (ci_low - null), direction * (ci_high - null)))
    effect = None if paper_effect is None else direction * (paper_effect - null)
    if effect is not None and not effect > 0:
        raise ValueError(f"the paper's effect {paper_effect} is not on the side direction={direction} says "
                         f"(null {null}): fix the sign of one of them")
    if low > 0:
        return "reproduced" if effect is None or high >= effect else "reproduced_smaller"
    if high < 0:
        return "contradicted"
    return "ruled_out" if effect is not None and high < effect else "underpowered"


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

