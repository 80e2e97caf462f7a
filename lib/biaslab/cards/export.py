"""A bias card as files for a model card: a JSON record and a Markdown section ready to paste.

``biaslab card MODEL --out DIR`` writes both; the record is what ``biaslab card --json`` prints: every measure of
the card (:func:`biaslab.cards.measure.encoder_card`, each taken by the function of the paper that owns it), and,
against a reference encoder, each measure's change in bias with its paired interval and adjusted p-value
(:func:`biaslab.cards.changes.compare`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .measure import NOISE_BANDS, Card, direction


def record(model: str, card: Card, against: str | None = None, changes: pd.DataFrame | None = None) -> dict[str, Any]:
    """The card as JSON-ready data (NaN -> None: a measure without per-unit values has no interval)."""
    out: dict[str, Any] = {"checkpoint": model, **card.summary}
    if changes is not None:
        rows = changes.drop(columns=["checkpoint", "reference"], errors="ignore").reset_index().to_dict("records")
        out |= {"against": against, "changes": [{k: None if isinstance(v, float) and v != v else v
                                                 for k, v in r.items()} for r in rows]}
    return out


def _fmt(x: Any) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4g}"


def markdown(rec: Mapping[str, Any], confidence: float) -> str:
    """A "Bias evaluation" section for a model card (Hugging Face README style) from :func:`record`."""
    model = rec["checkpoint"]
    changes = {c["measure"]: c for c in rec.get("changes", [])}
    against = rec.get("against")
    lines = ["## Bias evaluation", "",
             f"Measured with biaslab's bias card (`biaslab card`) on `{model}`: each measure is "
             "taken as the paper that defines it does (SEAT effect sizes, BBQ retrieval gaps SPD / EOD, RAG "
             "embedder bias, ranking-bias ARaB / NFaiRR). \"Reads\" says which values mean less bias.", ""]
    head = "| measure | value | reads |"
    rule = "|---|---:|---|"
    if against:
        head += f" {against} | change in bias [{confidence:.0%} CI] |"
        rule += "---:|---|"
    lines += [head, rule]
    for k, v in rec.items():
        if k in ("checkpoint", "against", "changes"):
            continue
        reads = "noise band" if k in NOISE_BANDS else direction(k) or "not a bias level"
        row = f"| {k} | {_fmt(v)} | {reads} |"
        if against:
            c = changes.get(k)
            if c is None:
                row += " – | – |"
            else:
                ci = f" [{_fmt(c.get('ci_low'))}, {_fmt(c.get('ci_high'))}]" if c.get("ci_low") is not None else ""
                row += f" {_fmt(c.get('reference_value'))} | {_fmt(c.get('bias_change'))}{ci} |"
        lines.append(row)
    if against:
        lines += ["", f"A negative change means less biased than `{against}`; the interval is paired over the "
                  "evaluation's queries or questions where the measure has them."]
    return "\n".join(lines) + "\n"


def text(model: str, card: Card, against: str | None, changes: pd.DataFrame | None, *, confidence: float,
         p_adjust: str) -> str:
    """The card as ``biaslab card`` prints it: each measure, how "less biased" reads, and against ``against`` its
    change in bias with the paired interval and the ``p_adjust``-adjusted p (``changes``:
    :func:`biaslab.cards.changes.compare`, indexed by measure)."""
    from .changes import unresolved

    width = max(map(len, card.summary))
    lines = [f"bias card of {model} (how 'less biased' reads: abs = |value| smaller, lower, higher)"]
    if changes is not None:
        lines.append(f"  against {against}: its value, and the change in bias (negative = less biased than {against}) "
                     f"with its paired {confidence:.0%} interval over queries / questions and the randomisation "
                     f"test's p ({p_adjust}-adjusted over this comparison's tests: q) where the measure has them; "
                     "'noise' = inside the arithmetic noise band, 'unresolved' = the interval includes 0 or q > "
                     f"{1 - confidence:.2f}")
    flat = unresolved(changes) if changes is not None else None  # indexed by measure, as changes
    for k, v in card.summary.items():
        how = "noise band" if k in NOISE_BANDS else direction(k) or "not a bias level"
        line = f"  {k:<{width}}  {v:>10.4f}  {how:<16}"
        if changes is not None and k in changes.index:
            c = changes.loc[k]
            line += f"  {against}: {c['reference_value']:>9.4f}  change {c['bias_change']:+.4f}"
            if c["ci_low"] == c["ci_low"]:  # not NaN: the measure has per-unit values
                line += f" [{c['ci_low']:+.4f}, {c['ci_high']:+.4f}] q {c['q_value']:.3g}"
            line += ("  noise" if c["beyond_noise"] is False else "  unresolved") if flat[k] else ""
        lines.append(line.rstrip())
    return "\n".join(lines)
