"""Group-fairness measures of a classifier (cscl §4.1; the public code's ``utils.py``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _counts(hit: np.ndarray, mask: np.ndarray, gidx: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group: rows in ``mask`` and, of those, rows with ``hit``."""
    return (np.bincount(gidx[mask], minlength=n_groups).astype(np.float64),
            np.bincount(gidx[mask & hit], minlength=n_groups).astype(np.float64))


def eo_gaps(y_true: np.ndarray, y_pred: np.ndarray, gidx: np.ndarray, n_groups: int,
            classes: np.ndarray) -> tuple[float, float, list[dict]]:
    """ΔTPR and ΔFPR summed over ``classes`` and groups (``gidx``: group index 0..n_groups-1 per row), and the
    per-(class, group) rates. The arithmetic of :func:`equalized_odds_gaps`, on arrays (fast enough to bootstrap)."""
    tpr_gap = fpr_gap = 0.0
    rates = []
    for cls in classes:
        hit, pos = y_pred == cls, y_true == cls
        n_pos, n_neg = pos.sum(), (~pos).sum()
        tpr = hit[pos].mean() if n_pos else np.nan
        fpr = hit[~pos].mean() if n_neg else np.nan
        gp, gtp = _counts(hit, pos, gidx, n_groups)
        gn, gfp = _counts(hit, ~pos, gidx, n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            tpr_a, fpr_a = gtp / gp, gfp / gn
        d_tpr, d_fpr = np.abs(tpr_a - tpr), np.abs(fpr_a - fpr)
        tpr_gap += float(np.nansum(d_tpr))
        fpr_gap += float(np.nansum(d_fpr))
        rates.append((cls, tpr_a, fpr_a, tpr, fpr, gp + gn))
    return tpr_gap, fpr_gap, rates


def equalized_odds_gaps(y_true: Sequence, y_pred: Sequence, groups: Sequence) -> dict:
    """Equalized-odds gaps as cscl §4.1 defines them (after Pruksachatkun et al. 2021):

        ΔTPR = Σ_y Σ_a |TPR_{y,a} − TPR_y|,   ΔFPR = Σ_y Σ_a |FPR_{y,a} − FPR_y|,   ΔEO = ΔTPR + ΔFPR

    with TPR_y, FPR_y one-vs-rest for class y over all rows and TPR_{y,a}, FPR_{y,a} over the rows of group a.
    Binary labels: the positive class only (the larger label, 1 for 0/1 labels), as the paper writes it; with more
    than two classes the sum runs over every class. (The public code always sums over both classes, which doubles
    the binary gaps: class 0's TPR is class 1's TNR.) A (class, group) cell with no row to define a rate adds
    nothing (the code counts its rate as 0, which charges the overall rate as a gap).

    Also returns ``f1`` (binary F1 of the positive class, macro F1 with more than two classes, as the paper
    reports performance), ``macro_f1``, ``accuracy``, ``n`` and the per-(class, group) ``rates`` table."""
    from sklearn.metrics import accuracy_score, f1_score

    y_true, y_pred, groups = np.asarray(y_true), np.asarray(y_pred), np.asarray(groups)
    if not len(y_true) == len(y_pred) == len(groups):
        raise ValueError(f"y_true ({len(y_true)}), y_pred ({len(y_pred)}) and groups ({len(groups)}) differ in length")
    if len(y_true) == 0:
        raise ValueError("equalized_odds_gaps needs at least one row")
    classes = np.unique(np.concatenate([y_true, y_pred]))
    binary = len(np.unique(y_true)) <= 2 and len(classes) <= 2
    names, gidx = np.unique(groups, return_inverse=True)
    tpr_gap, fpr_gap, per_class = eo_gaps(y_true, y_pred, gidx, len(names), classes[-1:] if binary else classes)
    rates = [{"class": cls.item(), "group": names[g].item(), "tpr": float(tpr_a[g]), "fpr": float(fpr_a[g]),
              "tpr_all": float(tpr), "fpr_all": float(fpr), "rows": int(rows[g])}
             for cls, tpr_a, fpr_a, tpr, fpr, rows in per_class for g in range(len(names))]
    macro = float(f1_score(y_true, y_pred, average="macro", zero_division=0))
    f1 = float(f1_score(y_true, y_pred, pos_label=classes[-1], average="binary", zero_division=0)) if binary else macro
    return {"tpr_gap": tpr_gap, "fpr_gap": fpr_gap, "eo_gap": tpr_gap + fpr_gap, "f1": f1, "macro_f1": macro,
            "accuracy": float(accuracy_score(y_true, y_pred)), "n": len(y_true), "rates": rates}
