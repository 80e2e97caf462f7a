"""ragfair's claims as computed verdicts, with the uncertainty behind them.

* :func:`intervals` — per checkpoint, SPD / EOD / Acc@1 (the bias card's means over BBQ categories) with a
  bootstrap interval over evaluation rows (resampled within categories), and its paired difference from the frozen
  baseline on the same resamples (interval and bootstrap p-value).
* :func:`claims` — the paper's claims (§4.1, §4.2, §4.3 / Table 2) with their effects, judged by magnitude
  (:func:`paper_claims`: :func:`biaslab.claims.finalize` with the competence table of :func:`competence`).

Row-level decisions come from :class:`.cards.Card` (``decisions``: per category, the gold and the retrieved answer
roles and the own-context hits), so every interval is computed from this run's retrievals.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .. import claims as cl
from .. import competence as comp
from .. import stats
from . import extrinsic, paper

NAN = float("nan")
BASELINE = "Baseline (frozen encoder)"
MEASURES = ("spd", "eod", "acc_at_1")
# each method and the same recipe trained with α = 0 (ragfair.train.runs *_a0): the fairness term's own effect
CONTROLS = {"Full framework": "Full without fairness (alpha=0)", "LoRA-only": "LoRA-only (alpha=0)",
            "WiSE-FT": "WiSE-FT (alpha=0)"}


def _flat(card) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return _flat_decisions(card.decisions)


def _flat_decisions(decisions: Mapping) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(category, gold role, retrieved role, hit) per evaluation row, from {category: (gold, retrieved, hit)}."""
    cats, gold, pred, hit = [], [], [], []
    for cat, (g, p, h) in decisions.items():
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


def evidence(card_of: Mapping, a: str, b: str | None, measure: str, *, rounds: int, seed: int) -> cl.Evidence:
    """``measure`` of checkpoint ``a`` minus that of ``b`` (``a`` alone when ``b`` is None) on the same evaluation
    rows, as :class:`biaslab.claims.Evidence`: SPD and EOD are gaps of rates within categories, not means of
    per-row values, so the standard error comes from the paired bootstrap over rows resampled within categories
    (``rounds``) and the interval is the Wald-type t interval (:meth:`~biaslab.claims.Evidence.from_se`)."""
    flats = _flats({k: card_of[k] for k in (a, b) if k is not None})
    strata = flats[a][0]
    n, full = len(strata), np.arange(len(strata))
    fs = [_measure(flats[k], measure) for k in (a, b) if k is not None]
    resamples = stats.resample_indices(n, rounds, seed, strata)
    value, draws = fs[0](full), fs[0](resamples)
    if len(fs) == 2:
        value, draws = value - fs[1](full), draws - fs[1](resamples)
    draws = draws[np.isfinite(draws)]
    se = float(draws.std(ddof=1)) if len(draws) > 1 else NAN
    return cl.Evidence.from_se(float(value), se, n, "BBQ rows")


def fisher_z(r: float, n: int, *, spearman: bool = False) -> cl.Evidence:
    """A correlation over ``n`` points on Fisher's z scale (atanh r), its standard error 1/√(n − 3) — for Spearman's
    ρ √(1.06/(n − 3)) (Fieller, Hartley & Pearson 1957) —: the small-sample interval for a correlation."""
    if not (n > 3 and math.isfinite(r) and abs(r) < 1):
        return cl.Evidence(NAN, NAN, 0, "points")
    return cl.Evidence.from_se(math.atanh(r), math.sqrt((1.06 if spearman else 1.0) / (n - 3)), n, "points")


def competence(card_of: Mapping, *, floor: float, level: float, rounds: int, seed: int,
               baseline: str = BASELINE) -> pd.DataFrame:
    """ragfair's competence table: the frozen encoder retrieves a context that answers the question
    (``ragfair.evaluate.acc_at_1``) in at least ``floor`` % of the evaluation rows (interval above the floor);
    SPD and EOD gaps of a retriever that is mostly wrong measure noise as much as bias."""
    rows = []
    if baseline in card_of:
        ev = evidence(card_of, baseline, None, "acc_at_1", rounds=rounds, seed=seed)
        rows.append(comp.beats("the frozen encoder's first context answers the question", "Acc@1 (%)", ev,
                               floor=floor, level=level))
    return comp.table(rows)


def claims(card_of: Mapping, corr: Mapping, trend: pd.DataFrame | None, table1: pd.DataFrame | None, *,
           acc_drop_bound: float, rounds: int, seed: int, baseline: str = BASELINE) -> list[cl.Pending]:
    """The paper's claims (abstract-free paper: §4 and the conclusion §5.1), each judged by magnitude
    (:func:`biaslab.claims.finalize` gives the verdicts):

    * §4.3 / Table 2: each single method (LoRA, WiSE-FT, head masking) and the full framework lower SPD and EOD
      against the frozen baseline (paired on the same rows), judged against the paper's change from its baseline;
    * §4.3: combining methods amplifies — the full framework's SPD / EOD below WiSE-FT's, the best single method;
    * §3.4.2, §4.3: the fairness term matters — each method's SPD below that of its α = 0 control
      (:data:`CONTROLS`; the paper gives no size);
    * §4.3: "accuracy never falls more than about two points": the full framework's Acc@1 change within
      ±``acc_drop_bound``;
    * §4.2: intrinsic and extrinsic bias correlate positively across checkpoints (Pearson r on Fisher's z, the
      paper's effect the middle of its [0.43, 0.65]);
    * §4.1: bias grows with layer depth (mean Spearman ρ over categories, the paper's 0.4842);
    * §4.1 / Table 1: SEAT fairness ranks the categories as the paper's does (Spearman ρ of ours against the
      paper's per category, on Fisher's z; the paper's groups were LLM-built, ours come from BBQ's fields)."""
    out: list[cl.Pending] = []
    kw = {"rounds": rounds, "seed": seed}
    base = paper.TABLE2[BASELINE]
    have = baseline in card_of
    for ck in ("LoRA-only", "WiSE-FT", "Head masking", "Full framework"):
        if ck not in card_of or not have:
            continue
        for i, m in enumerate(("spd", "eod")):
            change = paper.TABLE2[ck][i] - base[i]
            out.append(cl.effect(f"{ck} lowers {m.upper()} vs the frozen encoder", "§4.3, Table 2", f"{change:+.3f}",
                                 evidence(card_of, ck, baseline, m, **kw), direction=-1, paper_effect=change))
    if "Full framework" in card_of and "WiSE-FT" in card_of:
        for i, m in enumerate(("spd", "eod")):
            change = paper.TABLE2["Full framework"][i] - paper.TABLE2["WiSE-FT"][i]
            out.append(cl.effect(f"combining methods lowers {m.upper()} further (Full framework vs WiSE-FT)",
                                 "§4.3, Table 2", f"{change:+.3f}", evidence(card_of, "Full framework", "WiSE-FT", m,
                                                                             **kw),
                                 direction=-1, paper_effect=change))
    for method, control in CONTROLS.items():
        if method in card_of and control in card_of:
            out.append(cl.effect(f"the fairness term lowers SPD ({method} vs its α = 0 control)", "§3.4.2, §4.3",
                                 "lower", evidence(card_of, method, control, "spd", **kw), direction=-1))
    if "Full framework" in card_of and have:
        change = paper.TABLE2["Full framework"][2] - base[2]
        out.append(cl.no_change("the full framework costs little Acc@1 (change within the bound)", "§4.3",
                                f"{change:+.1f} points", evidence(card_of, "Full framework", baseline, "acc_at_1", **kw),
                                bound=acc_drop_bound))
    lo, hi = paper.CORRELATION_CI["pearson"]
    for key, label in (("spd", "SPD"), ("eod", "EOD")):
        c = corr.get(key, {})
        if "pearson_r" in c:
            out.append(cl.effect(f"‖SEAT‖ correlates positively with ‖{label}‖ across checkpoints (Fisher z of "
                                 "Pearson r)", "§4.2", f"r in [{lo}, {hi}]",
                                 fisher_z(c["pearson_r"], int(c.get("checkpoints", 0))), direction=1,
                                 paper_effect=math.atanh((lo + hi) / 2)))
    if trend is not None and len(trend):
        out.append(cl.effect("probed bias grows with layer depth (mean Spearman ρ over categories)", "§4.1",
                             f"{paper.DEPTH_SPEARMAN}", cl.Evidence.of(trend["spearman_rho"], "categories"),
                             direction=1, paper_effect=paper.DEPTH_SPEARMAN))
    if table1 is not None and len(table1):
        t = table1.dropna(subset=["fairness", "paper_fairness"])
        rho = float(t["fairness"].rank().corr(t["paper_fairness"].rank())) if len(t) > 1 else NAN
        out.append(cl.effect("SEAT fairness ranks the BBQ categories as the paper's Table 1 (Fisher z of Spearman ρ)",
                             "§4.1, Table 1", "Disability lowest, Nationality highest",
                             fisher_z(rho, len(t), spearman=True), direction=1))
    return out


def acts_checks(run_decisions: Mapping, run_terms, control_decisions: Mapping, control_terms, *, alpha: float,
                run: str, control: str) -> list[cl.Pending]:
    """Beyond the paper, a check rather than a claim (a mitigation that does not act is a bug until shown
    otherwise): trained at an exaggerated fairness weight ``alpha``, the recipe ``run`` must

    * lower what the term targets, L_fair on the training pairs, against the same recipe at α = 0 (``control``):
      paired per training batch (``fair_terms_after`` of :func:`.debias.train`);
    * change retrieval: the share of BBQ evaluation rows whose retrieved answer role differs from the control's
      (``decisions``: :func:`.extrinsic.category_decisions` of each) lies above 0."""
    r, c = _flat_decisions(run_decisions), _flat_decisions(control_decisions)
    if not (np.array_equal(r[0], c[0]) and np.array_equal(r[1], c[1])):
        raise ValueError(f"runs {run!r} and {control!r} were evaluated on other rows")
    fair = cl.Evidence.paired(run_terms, control_terms, "training batches")
    changed = cl.Evidence.of((r[2] != c[2]).astype(float), "BBQ rows")
    return [cl.effect(f"at α = {alpha:g} the fairness term lowers L_fair on the training pairs ({run} vs {control})",
                      "§3.4.2", "lower", fair, direction=-1, kind="check"),
            cl.effect(f"at α = {alpha:g} the fairness term changes retrieval (share of BBQ rows whose retrieved answer "
                      f"differs from {control}'s)", "§3.4.2", "> 0", changed, direction=1, kind="check")]


def paper_claims(card_of: Mapping, corr: Mapping, trend: pd.DataFrame | None, table1: pd.DataFrame | None, E, *,
                 level: float, rounds: int, seed: int, checks: list[cl.Pending]) -> tuple[list[cl.Claim], pd.DataFrame]:
    """(claims table rows, competence table) with the settings ``E`` (``ragfair.evaluate``): what ragfair_evaluate
    writes, ``checks`` (e.g. :func:`acts_checks`) after the claims. Every claim needs the competence check
    (:func:`competence`)."""
    comp_table = competence(card_of, floor=E.acc_floor, level=level, rounds=rounds, seed=seed)
    pending = claims(card_of, corr, trend, table1, acc_drop_bound=E.acc_drop_bound, rounds=rounds,
                     seed=seed) + list(checks)
    return cl.finalize(pending, level=level, competence_table=comp_table), comp_table
