"""Group-fairness measures of a classifier (cscl §4.1; the public code's ``utils.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


class Rates(NamedTuple):
    """The per-(class, group) rates behind :func:`eo_gaps`: one row per class, one column per group."""

    classes: np.ndarray  # [k]
    tpr: np.ndarray  # [k, groups] TPR_{y,a}
    fpr: np.ndarray  # [k, groups] FPR_{y,a}
    tpr_all: np.ndarray  # [k] TPR_y over all rows
    fpr_all: np.ndarray  # [k] FPR_y over all rows
    rows: np.ndarray  # [k, groups] rows per group


def _class_index(values: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Per value, its position in ``classes`` (-1 when it is none of them)."""
    if len(classes) == 0:
        return np.full(len(values), -1)
    order = np.argsort(classes, kind="stable")
    i = np.minimum(np.searchsorted(classes[order], values), len(classes) - 1)
    return np.where(classes[order][i] == values, order[i], -1)


def _cells(keep: np.ndarray, ci: np.ndarray, gidx: np.ndarray, k: int, n_groups: int) -> np.ndarray:
    """[class, group] counts of the rows in ``keep`` (class index ``ci``)."""
    return np.bincount(ci[keep] * n_groups + gidx[keep], minlength=k * n_groups).reshape(k, n_groups).astype(np.float64)


def eo_gaps(y_true: np.ndarray, y_pred: np.ndarray, gidx: np.ndarray, n_groups: int,
            classes: np.ndarray) -> tuple[float, float, Rates]:
    """ΔTPR and ΔFPR summed over ``classes`` and groups (``gidx``: group index 0..n_groups-1 per row), and the
    per-(class, group) :class:`Rates` (arrays: nothing is built per class on the bootstrap's path). The arithmetic of :func:`equalized_odds_gaps`, on arrays, every class at once from three
    [class, group] counts (the bootstrap calls it ~10⁵ times). Each rate is the same division of the same integer
    counts as a per-class mean, and the sums run in the same order, so the result is bit-identical to computing it
    class by class (tested)."""
    classes = np.asarray(classes)
    k = len(classes)
    yi, pi = _class_index(y_true, classes), _class_index(y_pred, classes)
    gp = _cells(yi >= 0, yi, gidx, k, n_groups)  # rows of class c (y = c) per group
    gtp = _cells((yi >= 0) & (yi == pi), yi, gidx, k, n_groups)  # ... predicted c
    gfp = _cells(pi >= 0, pi, gidx, k, n_groups) - gtp  # rows predicted c that are not of class c
    gn = np.bincount(gidx, minlength=n_groups).astype(np.float64) - gp  # rows not of class c per group
    n_pos, n_neg = gp.sum(axis=1), gn.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.where(n_pos > 0, gtp.sum(axis=1) / n_pos, np.nan)
        fpr = np.where(n_neg > 0, gfp.sum(axis=1) / n_neg, np.nan)
        tpr_a, fpr_a = gtp / gp, gfp / gn
    d_tpr, d_fpr = np.abs(tpr_a - tpr[:, None]), np.abs(fpr_a - fpr[:, None])
    if n_groups <= 2:  # a row of one or two numbers sums alike along either axis
        row_tpr, row_fpr = np.nansum(d_tpr, axis=1), np.nansum(d_fpr, axis=1)
    else:  # one-dimensional sums, in numpy's own order for a row
        row_tpr = [np.nansum(r) for r in d_tpr]
        row_fpr = [np.nansum(r) for r in d_fpr]
    tpr_gap = fpr_gap = 0.0
    for c in range(k):
        tpr_gap += float(row_tpr[c])
        fpr_gap += float(row_fpr[c])
    return tpr_gap, fpr_gap, Rates(classes, tpr_a, fpr_a, tpr, fpr, gp + gn)


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
    tpr_gap, fpr_gap, r = eo_gaps(y_true, y_pred, gidx, len(names), classes[-1:] if binary else classes)
    rates = [{"class": r.classes[c].item(), "group": names[g].item(), "tpr": float(r.tpr[c, g]),
              "fpr": float(r.fpr[c, g]), "tpr_all": float(r.tpr_all[c]), "fpr_all": float(r.fpr_all[c]),
              "rows": int(r.rows[c, g])}
             for c in range(len(r.classes)) for g in range(len(names))]
    macro = float(f1_score(y_true, y_pred, average="macro", zero_division=0))
    f1 = float(f1_score(y_true, y_pred, pos_label=classes[-1], average="binary", zero_division=0)) if binary else macro
    return {"tpr_gap": tpr_gap, "fpr_gap": fpr_gap, "eo_gap": tpr_gap + fpr_gap, "f1": f1, "macro_f1": macro,
            "accuracy": float(accuracy_score(y_true, y_pred)), "n": len(y_true), "rates": rates}
