"""Group-fairness measures of a classifier (cscl §4.1; the public code's ``utils.py``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _rates(y_true: np.ndarray, y_pred: np.ndarray, cls) -> tuple[float, float]:
    """TPR and FPR of class ``cls`` against the rest; NaN when the rows hold no positive (negative) of it."""
    pos, neg = y_true == cls, y_true != cls
    hit = y_pred == cls
    tpr = hit[pos].mean() if pos.any() else np.nan
    fpr = hit[neg].mean() if neg.any() else np.nan
    return float(tpr), float(fpr)


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
    summed = classes[-1:] if binary else classes
    rates, tpr_gap, fpr_gap = [], 0.0, 0.0
    for cls in summed:
        tpr, fpr = _rates(y_true, y_pred, cls)
        for a in np.unique(groups):
            rows = groups == a
            tpr_a, fpr_a = _rates(y_true[rows], y_pred[rows], cls)
            d_tpr = abs(tpr_a - tpr) if not np.isnan(tpr_a) else 0.0
            d_fpr = abs(fpr_a - fpr) if not np.isnan(fpr_a) else 0.0
            tpr_gap, fpr_gap = tpr_gap + d_tpr, fpr_gap + d_fpr
            rates.append({"class": cls.item(), "group": a.item(), "tpr": tpr_a, "fpr": fpr_a, "tpr_all": tpr,
                          "fpr_all": fpr, "rows": int(rows.sum())})
    macro = float(f1_score(y_true, y_pred, average="macro", zero_division=0))
    f1 = float(f1_score(y_true, y_pred, pos_label=classes[-1], average="binary", zero_division=0)) if binary else macro
    return {"tpr_gap": tpr_gap, "fpr_gap": fpr_gap, "eo_gap": tpr_gap + fpr_gap, "f1": f1, "macro_f1": macro,
            "accuracy": float(accuracy_score(y_true, y_pred)), "n": len(y_true), "rates": rates}
