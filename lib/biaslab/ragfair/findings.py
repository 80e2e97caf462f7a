"""ragfair's claims as computed verdicts, with the uncertainty behind them.

* :func:`intervals` — per checkpoint, SPD / EOD / Acc@1 (the bias card's means over BBQ categories) with a
  bootstrap interval over evaluation rows (resampled within categories), and its paired difference from the frozen
  baseline on the same resamples (interval and bootstrap p-value).
* :func:`claims` — the paper's claims (§4.1, §4.2, §4.3 / Table 2), each a verdict of :mod:`biaslab.claims`.

Row-level decisions come from :class:`.cards.Card` (``decisions``: per category, the gold and the retrieved answer
roles and the own-context hits), so every interval is computed from this run's retrievals.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .. import claims as cl
from .. import stats
from . import extrinsic, paper

BASELINE = "Baseline (frozen encoder)"
MEASURES = ("spd", "eod", "acc_at_1")
# each method and the same recipe trained with α = 0 (ragfair.train.runs *_a0): the fairness term's own effect
CONTROLS = {"Full framework": "Full without fairness (alpha=0)", "LoRA-only": "LoRA-only (alpha=0)",
            "WiSE-FT": "WiSE-FT (alpha=0)"}


def _flat(card) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    cats, gold, pred, hit = [], [], [], []
    for cat, (g, p, h) in card.decisions.items():
        cats += [cat] * len(g)
        gold.append(g)
        pred.append(p)
        hit.append(h)
    return np.array(cats), np.concatenate(gold), np.concatenate(pred), np.concatenate(hit)


def _measure(flat, name: str):
    """The card's summary of ``name`` (mean over categories) on a resample of row indices: ``fn(ix)`` for one
    resample ``[n]`` (a float) or for a ``[rounds, n]`` matrix of them (one value per row, in one pass:
    :func:`.extrinsic.parity_gaps` on every row at once). Resamples are drawn within categories
    (:func:`biaslab.stats.resample_indices` with the categories as strata), so the rows at a category's positions
    are that category's."""
    cats, gold, pred, hit = flat
    labels = list(dict.fromkeys(cats.tolist()))
    where = [np.flatnonzero(cats == c) for c in labels]

    def fn(ix: np.ndarray):
        ix = np.asarray(ix)
        rows = np.atleast_2d(ix)
        if not np.array_equal(cats[rows], np.broadcast_to(cats, rows.shape)):
            raise ValueError("resample the rows within categories (strata = the rows' categories)")
        vals = np.empty((len(rows), len(labels)))
        for j, pos in enumerate(where):
            sel = rows[:, pos]
            if name == "acc_at_1":
                vals[:, j] = 100.0 * (hit[sel].sum(axis=1) / sel.shape[1])
            else:
                vals[:, j] = extrinsic.parity_gaps(gold[sel], pred[sel])[0 if name == "spd" else 1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a resample with no defined category: NaN
            res = np.nanmean(vals, axis=1)
        return float(res[0]) if ix.ndim == 1 else res

    return fn


def _flats(card_of: Mapping) -> dict:
    flats = {name: _flat(card) for name, card in card_of.items()}
    first = next(iter(flats.values()))
    for name, f in flats.items():
        if not (np.array_equal(f[0], first[0]) and np.array_equal(f[1], first[1])):
            raise ValueError(f"checkpoint {name!r} was evaluated on other rows than the others")
    return flats


def compare(card_of: Mapping, a: str, b: str, measure: str, *, rounds: int, confidence: float,
            seed: int) -> stats.Estimate:
    """``measure`` of checkpoint ``a`` minus that of ``b`` on the same evaluation rows, with its paired bootstrap
    interval (rows resampled within categories) and p-value."""
    flats = _flats({a: card_of[a], b: card_of[b]})
    strata = flats[a][0]
    return stats.paired_statistic(len(strata), _measure(flats[a], measure), _measure(flats[b], measure),
                                  rounds=rounds, confidence=confidence, seed=seed, strata=strata, vectorized=True)


def intervals(card_of: Mapping, *, rounds: int, confidence: float, seed: int,
              baseline: str = BASELINE) -> pd.DataFrame:
    """One row per (checkpoint, measure): value, CI, and the paired difference from ``baseline`` (CI, p)."""
    flats = _flats(card_of)
    strata = next(iter(flats.values()))[0]
    rows = []
    for name, f in flats.items():
        for m in MEASURES:
            est = stats.ci_statistic(len(strata), _measure(f, m), rounds=rounds, confidence=confidence, seed=seed,
                                     strata=strata, vectorized=True)
            row = {"checkpoint": name, "measure": m, **est.as_dict()}
            if baseline in flats and name != baseline:
                d = compare(card_of, name, baseline, m, rounds=rounds, confidence=confidence, seed=seed)
                row.update({"diff_vs_baseline": d.value, "diff_ci_low": d.ci_low, "diff_ci_high": d.ci_high,
                            "diff_p_value": d.p_value})
            rows.append(row)
    return pd.DataFrame(rows)


def claims(card_of: Mapping, corr: Mapping, trend: pd.DataFrame | None, *, acc_drop_bound: float,
           rounds: int, confidence: float, seed: int, baseline: str = BASELINE) -> list[cl.Claim]:
    """The paper's claims, each a verdict from our numbers:

    * §4.3: each single method (LoRA, WiSE-FT, head masking) and the full framework lower SPD and EOD against the
      frozen baseline (paired difference < 0 on the same rows);
    * §4.3: the full framework's, LoRA-only's and WiSE-FT's SPD is lower than that of the same recipe trained with
      α = 0 (:data:`CONTROLS`: the fairness term matters);
    * §4.3: the accuracy cost is small — the full framework's Acc@1 change within ±``acc_drop_bound`` points;
    * §4.2: intrinsic and extrinsic bias correlate positively across checkpoints (Pearson r, z-scored protocol:
      the bootstrap interval above 0 — and, when ``corr`` carries the perturbation check, the range of r over the
      perturbed re-measurements too: the verdict reads the hull of both);
    * §4.1: bias grows with layer depth (mean Spearman ρ of bias vs depth over categories > 0)."""
    out: list[cl.Claim] = []
    kw = {"rounds": rounds, "confidence": confidence, "seed": seed}
    base = paper.TABLE2[BASELINE]
    for ck in ("LoRA-only", "WiSE-FT", "Head masking", "Full framework"):
        if ck not in card_of or baseline not in card_of:
            continue
        for i, m in enumerate(("spd", "eod")):
            est = compare(card_of, ck, baseline, m, **kw)
            pv = f"{paper.TABLE2[ck][i] - base[i]:+.3f}" if ck in paper.TABLE2 else "lower"
            out.append(cl.direction(f"{ck} lowers {m.upper()} vs the frozen encoder", "§4.3, Table 2", pv, est,
                                    expected="less"))
    for method, control in CONTROLS.items():
        if method in card_of and control in card_of:
            est = compare(card_of, method, control, "spd", **kw)
            out.append(cl.direction(f"the fairness term lowers SPD ({method} vs its α = 0 control)", "§3.4.2, §4.3",
                                    "lower", est, expected="less"))
    if "Full framework" in card_of and baseline in card_of:
        est = compare(card_of, "Full framework", baseline, "acc_at_1", **kw)
        pv = paper.TABLE2["Full framework"][2] - base[2]
        out.append(cl.negligible("the full framework costs little Acc@1 (change within the bound)", "§4.3",
                                 f"{pv:+.1f} points", est, bound=acc_drop_bound))
    for key, label in (("spd", "SPD"), ("eod", "EOD")):
        c = corr.get(key, {})
        if "pearson_ci" in c:
            (lo, hi), method = c["pearson_ci"], f"bootstrap over rows, {c.get('rounds')} rounds"
            if "perturbation" in c:  # the hull with the perturbed re-measurements' range (NaN stays NaN: inconclusive)
                p = c["perturbation"]
                lo, hi = float(np.min([lo, p["pearson_ci"][0]])), float(np.max([hi, p["pearson_ci"][1]]))
                method += f", with {p['rounds']} re-measurements at vector cosine {p['cosine']:g}"
            est = stats.Estimate(c["pearson_r"], lo, hi, int(c.get("checkpoints", 0)), method)
            lo, hi = paper.CORRELATION_CI["pearson"]
            out.append(cl.direction(f"‖SEAT‖ correlates positively with ‖{label}‖ across checkpoints (Pearson r)",
                                    "§4.2", f"r in [{lo}, {hi}]", est, expected="greater"))
    if trend is not None and len(trend):
        est = stats.ci_mean(trend["spearman_rho"], **kw)
        out.append(cl.direction("probed bias grows with layer depth (mean Spearman ρ over categories)", "§4.1",
                                f"{paper.DEPTH_SPEARMAN}", est, expected="greater"))
    return out
