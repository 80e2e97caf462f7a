"""Changes in bias between bias cards: each row against its reference, with intervals, tests and noise bands.

Bias changes are taken against each row's reference (:func:`references`: the base encoder; fairrank's base ranker;
cscl's CE classifier on the same task). Where a measure is a mean over evaluation units — the re-ranking measures
over queries, embedder bias over test questions — :func:`bias_change` gives the change a paired bootstrap interval
over the same units and a paired randomisation test, its p-values adjusted over the whole table (unadjusted, a test
at 5 % would call about 5 % of the unchanged measures moved, by chance alone); BBQ SPD / EOD carry an
arithmetic-noise band instead (:func:`biaslab.cards.measure.noise_band`); the other changes (SEAT, probing, ΔEO)
are point estimates. A change inside its noise band, whose interval includes 0 or that is not significant after the
adjustment is not counted as a movement (:func:`moved`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .measure import UNIT_COLUMNS, Card, direction


def references(cards: pd.DataFrame, base_encoder: str) -> pd.Series:
    """Each row's reference: the base encoder (encoders), fairrank's base ranker of the same backbone (rankers;
    BM25 for itself), cscl's CE classifier on the same task (classifiers)."""
    names = set(cards["checkpoint"])
    ref = {}
    for name, kind in zip(cards["checkpoint"], cards["kind"], strict=True):
        if kind == "encoder":
            ref[name] = f"base/{base_encoder}"
        elif kind == "ranker":
            backbone = name.split("/", 1)[1].split("|")[0]
            cand = f"fairrank/{backbone}|base@0"
            ref[name] = cand if cand in names else name
        else:
            task = name.split("/")[1]
            ref[name] = f"cscl/{task}/ce"
    missing = sorted(set(ref.values()) - names)
    if missing:
        raise ValueError(f"reference rows {missing} are not in the cards table")
    return pd.Series(ref)


CHANGE_COLUMNS = ["checkpoint", "paper", "measure", "reference", "value", "reference_value", "bias_change", "ci_low",
                  "ci_high", "p_value", "q_value", "significant", "beyond_noise"]


def bias_change(cards: pd.DataFrame, base_encoder: str, units: pd.DataFrame | None, *, rounds: int,
                confidence: float, seed: int, test_rounds: int, p_adjust: str) -> pd.DataFrame:
    """Long table: per checkpoint and bias measure, its value, its reference's value and the change in bias
    (negative = less biased than the reference, in the measure's own units). Where both have per-unit values of the
    measure in ``units`` (``checkpoint, measure, unit, value``; :class:`Card`) on the same units: ``ci_low`` /
    ``ci_high``, the paired bootstrap interval of the change over those units (``rounds`` resamples, each drawn once
    for both; :func:`biaslab.stats.paired_statistic`); ``p_value``, the two-sided paired randomisation test of the
    change (``test_rounds`` random swaps of a unit's two values; :func:`biaslab.stats.permutation_p`); ``q_value``,
    the p-values adjusted over every test in the table (``p_adjust``, :func:`biaslab.stats.adjust_p`: the table asks
    one question — which mitigation moved which measure — so its tests are one family); ``significant``:
    ``q_value`` ≤ 1 − ``confidence``, the false discovery rate the intervals' level implies. Empty otherwise.
    ``beyond_noise`` where the measure has a noise band (BBQ SPD / EOD, :func:`noise_band`): whether the
    checkpoint's band and its reference's are disjoint (as bands of bias: of |value| for a measure read by
    magnitude); empty for the other measures. ``rounds``, ``confidence``, ``seed``: ``common.uncertainty`` and
    ``common.seed`` (``units`` None or ``rounds`` 0: point estimates only); ``test_rounds``, ``p_adjust``:
    ``cards.permutation_rounds`` and ``cards.p_adjust``."""
    from .. import stats

    ref = references(cards, base_encoder)
    by_name = cards.set_index("checkpoint")
    per_unit = {} if units is None or not rounds else {
        key: g.set_index("unit")["value"] for key, g in units.groupby(["checkpoint", "measure"], sort=False)}
    rows = []
    for measure in [c for c in cards.columns if direction(c)]:
        how = direction(measure)
        band = [f"{measure}_min", f"{measure}_max"]
        for name, value in by_name[measure].dropna().items():
            r = ref[name]
            base = by_name.at[r, measure]
            if r == name or pd.isna(base):
                continue
            change = float(_BIAS[how](value) - _BIAS[how](base))
            beyond = None
            if set(band) <= set(by_name.columns) and by_name.loc[[name, r], band].notna().all(axis=None):
                (lo, hi), (rlo, rhi) = (_bias_range(*by_name.loc[n, band], how) for n in (name, r))
                beyond = bool(hi < rlo or lo > rhi)
            est = _paired_change(per_unit.get((name, measure)), per_unit.get((r, measure)), how, rounds=rounds,
                                 confidence=confidence, seed=seed, test_rounds=test_rounds)
            rows.append({"checkpoint": name, "paper": by_name.at[name, "paper"], "measure": measure,
                         "reference": r, "value": value, "reference_value": base, "bias_change": change,
                         "ci_low": est[0], "ci_high": est[1], "p_value": est[2], "beyond_noise": beyond})
    out = pd.DataFrame(rows, columns=CHANGE_COLUMNS)
    out["q_value"] = stats.adjust_p(out["p_value"].astype(float), p_adjust)
    out["significant"] = [None if np.isnan(q) else bool(q <= 1 - confidence) for q in out["q_value"]]
    return out


# a measure's value as a level of bias (larger = more biased), per reading (direction): one definition for the
# change between two cards and for its interval and test over units
_BIAS = {"abs": np.abs, "lower": np.positive, "higher": np.negative}


def _paired_change(mine: pd.Series | None, ref: pd.Series | None, how: str, *, rounds: int, confidence: float,
                   seed: int, test_rounds: int) -> tuple[float, float, float]:
    """(low, high, p) of the change in bias between two systems' per-unit values (unit → value; the measure is
    their mean, read as ``how``) over the units both were measured on: the paired bootstrap interval and the paired
    randomisation test's p-value. NaN when either has no units or they were measured on different units (the change
    would not be paired)."""
    from .. import stats

    nan = (float("nan"),) * 3
    if mine is None or ref is None or len(mine) < 2 or set(mine.index) != set(ref.index) or not mine.index.is_unique:
        return nan
    a, b = mine.to_numpy(np.float64), ref.loc[mine.index].to_numpy(np.float64)

    def bias(v, axis=0):  # the level of bias of the mean over units (axis 0 of [units] or [units, swaps])
        return _BIAS[how](np.mean(v, axis=axis))

    est = stats.paired_statistic(len(a), lambda ix: bias(a[ix]), lambda ix: bias(b[ix]), rounds=rounds,
                                 confidence=confidence, seed=seed)
    p = stats.permutation_p(a, b, lambda x, y, axis: bias(x, axis) - bias(y, axis), rounds=test_rounds, seed=seed)
    return est.ci_low, est.ci_high, p


def compare(card: Card, name: str, reference: Card, reference_name: str, *, rounds: int, confidence: float,
            seed: int, test_rounds: int, p_adjust: str) -> pd.DataFrame:
    """One encoder's card against another's (``biaslab card MODEL --against REF``): :func:`bias_change` of the pair,
    read as the cards stage reads every encoder against its base — the change in bias per measure, its paired
    interval and test where the measure has per-unit values (adjusted over this pair's tests), and for BBQ SPD /
    EOD whether the two noise bands are disjoint (``beyond_noise``)."""
    if name == reference_name:
        raise ValueError(f"{name!r} is compared with itself; name another encoder to compare against")
    ref_row = f"base/{reference_name}"
    pair = pd.DataFrame([{"checkpoint": ref_row, "paper": "base", "kind": "encoder", **reference.summary},
                         {"checkpoint": name, "paper": "", "kind": "encoder", **card.summary}])
    units = pd.concat([reference.units.assign(checkpoint=ref_row), card.units.assign(checkpoint=name)],
                      ignore_index=True)[UNIT_COLUMNS]
    return bias_change(pair, reference_name, units, rounds=rounds, confidence=confidence, seed=seed,
                       test_rounds=test_rounds, p_adjust=p_adjust).drop(columns=["paper"])


def _bias_range(lo: float, hi: float, how: str) -> tuple[float, float]:
    """A band of values as a band of bias: of |value| for ``abs`` measures (0 when the band spans 0)."""
    if how != "abs":
        return lo, hi
    return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))


def unresolved(changes: pd.DataFrame) -> pd.Series:
    """Rows of :func:`bias_change` whose change the data cannot tell from none: inside the arithmetic noise band
    (``beyond_noise`` False), with a paired interval that includes 0, or not significant once the table's tests are
    adjusted for their number (``significant`` False). Empty bands, intervals and tests count as resolved (point
    estimates)."""
    inside = changes["beyond_noise"].map(lambda b: b is False)
    lo, hi = changes["ci_low"].astype(float), changes["ci_high"].astype(float)
    return inside | ((lo <= 0) & (hi >= 0)) | changes["significant"].map(lambda b: b is False)


def moved(changes: pd.DataFrame, top: int) -> pd.DataFrame:
    """Per bias measure, the ``top`` checkpoints that lowered it most against their reference (ties kept in
    table order), with the paper the mitigation comes from: does a mitigation from one paper reduce the bias
    measured by another? A reduction the data cannot resolve (:func:`unresolved`: inside the noise band of BBQ
    SPD / EOD, a paired interval over queries / questions that includes 0, or not significant once adjusted for the
    table's number of tests) is not a movement and is left out."""
    less = changes[(changes["bias_change"] < 0) & ~unresolved(changes)].sort_values(["measure", "bias_change"], kind="stable")
    return less.groupby("measure", sort=True).head(top).reset_index(drop=True)


def unresolved_cells(changes: pd.DataFrame, grid: pd.DataFrame) -> list[tuple[int, int]]:
    """(row, column) positions in ``grid`` (:func:`heatmap_frame`) of :func:`unresolved` changes."""
    rows, cols = {n: i for i, n in enumerate(grid.index)}, {m: j for j, m in enumerate(grid.columns)}
    flat = changes[unresolved(changes)]
    return [(rows[c], cols[m]) for c, m in zip(flat["checkpoint"], flat["measure"], strict=True)]


def heatmap_frame(changes: pd.DataFrame) -> pd.DataFrame:
    """Checkpoint × measure, each column's bias change divided by its largest |change| (so columns in different
    units share one colour scale): −1 = the largest reduction in that column, +1 = the largest increase."""
    wide = changes.pivot_table(index="checkpoint", columns="measure", values="bias_change", sort=False)
    scale = wide.abs().max().replace(0, 1.0)  # a column with no change stays 0 (measured), not blank
    return wide / scale


def heatmap_figure(changes: pd.DataFrame, confidence: float):
    """The cards' heatmap: :func:`heatmap_frame` coloured blue (less biased) to red (more), grey where a measure does
    not apply or is not taken, and "≈" on every :func:`unresolved` change."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    grid = heatmap_frame(changes)
    fig, ax = plt.subplots(figsize=(1.0 + 0.75 * grid.shape[1], 1.2 + 0.32 * grid.shape[0]))
    sns.heatmap(grid, cmap="RdBu_r", center=0, vmin=-1, vmax=1, ax=ax, linewidths=0.5,
                cbar_kws={"label": "change in bias / largest |change| in the column"})
    ax.grid(False)
    ax.set_facecolor("0.7")  # grey: the measure does not apply to that checkpoint, or is not taken (cards.csv says why)
    for i, j in unresolved_cells(changes, grid):
        ax.text(j + 0.5, i + 0.5, "≈", ha="center", va="center", fontsize=9)
    ax.set_title("Change in each bias measure against the row's reference\n(blue: less biased, red: more biased; grey: "
                 f"not measured)\n≈: within the noise band, its {confidence:.0%} interval includes 0, or not "
                 "significant once adjusted for the number of tests")
    ax.set_xlabel("measure")
    ax.set_ylabel("checkpoint")
    return fig
