"""A paper's claims as verdicts computed from the data: ``reports/<paper>/results/claims.csv``.

A paper's analysis states each claim (or check) with our evidence — :func:`effect` ("X is larger than Y", or
smaller) or :func:`no_change` ("X stays within ±b") on an :class:`Evidence` (the per-unit mean, or a statistic with
its standard error) — and :func:`finalize` judges them together; no verdict is typed by hand.

:func:`verdict` is the magnitude-aware rule (equivalence and "small telescopes" reasoning): beyond the sign it says
whether our interval reaches the paper's effect, stops short of it, or rules an effect as large as the paper's out.

Each row keeps the paper's value (a number or a short phrase), ours, the interval, the verdict and the rule that
produced it, so a reader can recompute every verdict from the row, and more: ``kind`` (``claim`` — a finding of the
paper — or ``check`` — a sanity check such as "the mitigation acts", never counted as a reproduction),
``paper_effect`` (the paper's effect in our units), ``n``, ``interval`` (the method), ``p_value``, ``p_adjusted``
(Holm across the paper's ``claim`` rows), ``mde`` (the smallest effect our n detects at 80 % power) and ``n_needed``
(the units at which the MDE reaches the paper's effect). The verdict of a claim uses the Holm level of its rank: its
interval is the Student-t interval at 1 − α / (m − rank + 1), widened to the null where Holm's step-down stops, so
"excludes the null" holds for the family of claims, not one at a time (Holm 1979). A claim whose baseline fails its
competence floor (:mod:`biaslab.competence`) is ``untestable``, naming the failed check.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

# what :func:`verdict` returns
MAGNITUDE_VERDICTS = ("reproduced", "reproduced_smaller", "ruled_out", "contradicted", "underpowered", "untestable")
VERDICTS = MAGNITUDE_VERDICTS
COLUMNS = ["claim", "paper_section", "paper_value", "our_value", "ci_low", "ci_high", "verdict", "rule", "kind",
           "paper_effect", "n", "interval", "p_value", "p_adjusted", "mde", "n_needed"]
KINDS = ("claim", "check")
NAN = float("nan")


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
    kind: str = "claim"
    paper_effect: float = NAN
    n: float = NAN
    interval: str = ""
    p_value: float = NAN
    p_adjusted: float = NAN
    mde: float = NAN
    n_needed: float = NAN


def table(claims: list[Claim]) -> pd.DataFrame:
    bad = [c.verdict for c in claims if c.verdict not in VERDICTS]
    if bad:
        raise ValueError(f"unknown verdicts {bad}")
    kinds = [c.kind for c in claims if c.kind not in KINDS]
    if kinds:
        raise ValueError(f"unknown kinds {kinds}: one of {KINDS}")
    return pd.DataFrame([asdict(c) for c in claims], columns=COLUMNS)


def write(path: str | Path, claims: list[Claim]) -> pd.DataFrame:
    """Write ``claims`` (the rows :func:`finalize` returns) as a claims.csv and return the table."""
    from .io import write_csv

    out = table(claims)
    write_csv(path, out)
    return out


def summary(df: pd.DataFrame) -> dict[str, int]:
    """Verdict counts of the ``claim`` rows (checks are not findings), for metrics.json and the README: every verdict
    that occurs, in :data:`VERDICTS` order."""
    rows = df[df["kind"] == "claim"]
    return {v: int((rows["verdict"] == v).sum()) for v in VERDICTS if (rows["verdict"] == v).any()}


def _fmt(x) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.3g}"


def markdown(df: pd.DataFrame) -> str:
    """The claims table as Markdown (claim, paper section, paper's value and effect, ours with its interval, the
    MDE, verdict), verdict counts of the claims first — what ``biaslab claims`` prints for the README."""
    counts = summary(df)
    checks = df[df["kind"] == "check"]
    head = ", ".join(f"{n} {v}" for v, n in counts.items())
    if len(checks):
        head += f"; checks: {len(checks)} ({int((checks['verdict'] == 'reproduced').sum())} hold)"
    lines = [head, "", "| claim | kind | section | paper (effect) | ours [CI] | MDE | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in df.itertuples(index=False):
        ours = f"{_fmt(r.our_value)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]"
        paper = r.paper_value if not math.isfinite(r.paper_effect) else f"{r.paper_value} ({_fmt(r.paper_effect)})"
        lines.append(f"| {r.claim} | {r.kind} | {r.paper_section} | {paper} | {ours} | {_fmt(r.mde)} | "
                     f"**{r.verdict}** |")
    return "\n".join(lines)


def read(path: str | Path) -> pd.DataFrame:
    """A claims.csv, checked: every column of :data:`COLUMNS` and known verdicts and kinds only."""
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {COLUMNS} (written by biaslab.claims.write)")
    return table([Claim(**{c: r[c] for c in COLUMNS}) for r in df.to_dict("records")])


# ------------------------------------------------------------------------------------- rebuilt tables
@dataclass(frozen=True)
class Evidence:
    """Our effect measured on ``n`` units (queries, questions, seeds): the mean of the per-unit values (paired
    differences for "X beats Y") and their standard deviation. Intervals are Student-t
    (:func:`biaslab.stats.mean_ci`), the p-value that of the two-sided one-sample t test — the same test, so an
    interval at level 1 − α excludes the null exactly when p < α."""

    value: float
    sd: float
    n: int
    unit: str = "units"

    @classmethod
    def of(cls, values, unit: str = "units") -> Evidence:
        import numpy as np

        x = np.asarray(values, dtype=np.float64)
        x = x[np.isfinite(x)]
        if len(x) == 0:
            return cls(NAN, NAN, 0, unit)
        return cls(float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else NAN, len(x), unit)

    @classmethod
    def paired(cls, a, b, unit: str = "units") -> Evidence:
        """The differences ``a − b`` of paired units (a unit missing on either side is dropped)."""
        import numpy as np

        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            raise ValueError(f"paired values need the same units: {a.shape} against {b.shape}")
        return cls.of(a - b, unit)

    @classmethod
    def from_se(cls, value: float, se: float, n: int, unit: str = "units") -> Evidence:
        """A statistic that is not a mean of per-unit values (a parity gap within categories, a Fisher-z
        correlation) with its standard error ``se`` over ``n`` units: the interval is then the Wald-type
        ``value ± t(n − 1) · se`` (t rather than normal quantiles: slightly wider, never narrower) and the p-value
        its t test."""
        ok = math.isfinite(value) and math.isfinite(se) and n > 1
        return cls(float(value), float(se) * math.sqrt(n) if ok else NAN, int(n) if ok else 0, unit)

    def interval(self, level: float) -> tuple[float, float]:
        from .stats import t_interval

        low, high = t_interval(self.value, self.sd, self.n, level)
        return float(low), float(high)

    def p(self, null: float = 0.0, alternative: str = "two-sided") -> float:
        from scipy import stats as st

        if self.n < 2 or not math.isfinite(self.sd):
            return NAN
        if self.sd == 0:
            return 1.0 if self.value == null else 0.0
        t = (self.value - null) / (self.sd / math.sqrt(self.n))
        df = self.n - 1
        return float({"two-sided": 2 * st.t.sf(abs(t), df), "greater": st.t.sf(t, df),
                      "less": st.t.cdf(t, df)}[alternative])


@dataclass(frozen=True)
class Pending:
    """A claim or check before :func:`finalize` gives it its level, interval and verdict."""

    claim: str
    paper_section: str
    paper_value: str
    evidence: Evidence
    kind: str
    direction: int | None  # +1 / -1 for an effect, None for a claim of no change
    paper_effect: float | None
    bound: float | None
    null: float
    requires: tuple[str, ...] | None  # competence checks it needs (None: every check of the paper)
    untestable: str  # a reason known before the data (e.g. the paper's effect leaves the measure's range)


def effect(claim: str, section: str, paper_value, evidence: Evidence, *, direction: int,
           paper_effect: float | None = None, null: float = 0.0, kind: str = "claim",
           requires: tuple[str, ...] | None = None, untestable: str = "") -> Pending:
    """A claim (or check) that our effect lies on the paper's side of ``null`` (``direction`` +1: an increase),
    judged against the paper's effect ``paper_effect`` (our units; None when the paper gives no size)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction}")
    if paper_effect is not None and not direction * (paper_effect - null) > 0:
        raise ValueError(f"{claim}: the paper's effect {paper_effect} is not on the side direction={direction} says")
    return Pending(claim, section, str(paper_value), evidence, kind, direction, paper_effect, None, null, requires,
                   untestable)


def no_change(claim: str, section: str, paper_value, evidence: Evidence, *, bound: float, kind: str = "claim",
              requires: tuple[str, ...] | None = None) -> Pending:
    """A claim that our effect stays within ±``bound`` (an equivalence test: two one-sided t tests, TOST)."""
    if not bound > 0:
        raise ValueError(f"the equivalence bound must be > 0, got {bound}")
    return Pending(claim, section, str(paper_value), evidence, kind, None, None, bound, 0.0, requires, "")


def _p(p: Pending) -> float:
    ev = p.evidence
    if p.bound is not None:  # TOST: both one-sided tests must reject
        return max(ev.p(-p.bound, "greater"), ev.p(p.bound, "less"))
    return ev.p(p.null)


def finalize(pending: list[Pending], *, level: float, competence_table: pd.DataFrame | None = None,
             power: float = 0.8) -> list[Claim]:
    """The rows of a claims table: Holm-adjusted p-values across the ``claim`` rows (checks are tested alone at
    ``level``), each claim's interval at its Holm level (an effect's widened to the null once Holm's step-down
    stops; a no-change claim is then not reproduced, though an interval wholly outside its bound contradicts it), its
    verdict (:func:`verdict`), the MDE at ``level`` and ``power`` and the units its paper effect needs. A row whose
    competence checks (``requires``; all of ``competence_table`` when None) did not pass is ``untestable``."""
    from .stats import adjust_p, mde, units_for_effect

    alpha = 1 - level
    p_raw = [_p(p) for p in pending]
    failed = {} if competence_table is None else {
        r.check: r for r in competence_table.itertuples(index=False) if not bool(r.passed)}
    blockers = [[c for c in (failed if p.requires is None else p.requires) if c in failed] for p in pending]
    # the family: the claims that are tested (not untestable before the data, not gated by a failed baseline)
    family = [i for i, p in enumerate(pending) if p.kind == "claim" and not p.untestable and not blockers[i]
              and math.isfinite(p_raw[i])]
    p_adj = list(p_raw)
    adjusted = adjust_p([p_raw[i] for i in family], "holm") if family else []
    row_level = {i: level for i in range(len(pending))}
    for rank, i in enumerate(sorted(family, key=lambda i: p_raw[i])):
        row_level[i] = 1 - alpha / (len(family) - rank)
    for i, a in zip(family, adjusted, strict=True):
        p_adj[i] = float(a)
    out = []
    for i, p in enumerate(pending):
        ev = p.evidence
        low, high = ev.interval(row_level[i])
        stopped = math.isfinite(p_adj[i]) and p_adj[i] >= alpha
        if stopped and p.bound is None and math.isfinite(low):
            low, high = min(low, p.null), max(high, p.null)  # Holm stopped: no claim that the null is excluded
        if p.untestable:
            v, why = "untestable", p.untestable
        elif blockers[i] and p.kind == "claim":
            v, why = "untestable", f"the baseline fails its competence check {blockers[i][0]!r}"
        elif p.bound is not None:
            # Holm tests equivalence (TOST): once it stops, "inside the bounds" is not claimed; an interval wholly
            # outside them (a change larger than the bound) stays a contradiction
            v = verdict(low, high, bound=p.bound, null=p.null)
            v = "underpowered" if v == "reproduced" and stopped else v
            why = f"no change: the interval inside ±{p.bound:g} reproduces, wholly outside contradicts"
        else:
            v = verdict(low, high, paper_effect=p.paper_effect, null=p.null, direction=p.direction)
            side = "above" if p.direction > 0 else "below"
            why = f"effect {side} {p.null:g}" + ("" if p.paper_effect is None else
                                                  f", judged against the paper's {p.paper_effect:.3g}")
        how = f"Student t over {ev.n} {ev.unit}"
        if row_level[i] != level:
            how += f", Holm level {100 * row_level[i]:.3g} %"
        m = mde(ev.sd, ev.n, level=level, power=power)
        need = None if p.paper_effect is None else units_for_effect(ev.sd, p.paper_effect - p.null, level=level,
                                                                    power=power)
        out.append(Claim(p.claim, p.paper_section, p.paper_value, ev.value, low, high, v, f"{why} ({how})",
                         p.kind, NAN if p.paper_effect is None else float(p.paper_effect), float(ev.n), how,
                         p_raw[i], p_adj[i] if i in family else NAN, m, NAN if need is None else float(need)))
    return out
