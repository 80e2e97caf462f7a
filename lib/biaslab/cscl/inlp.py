"""Iterative nullspace projection (INLP; Ravfogel et al. 2020), the cscl baseline of §4.2.

Follows the authors' ``debias.get_debiasing_projection`` (the cscl public code ships it unchanged): train a linear
classifier for the protected attribute on the current projection of the representations, keep its weight rows
when its held-out accuracy reaches ``min_accuracy``, project the data onto the intersection of the nullspaces of
every kept classifier, repeat. The final projection is P = I − P_rowspace(Σ_i P_Ri) (their "intersection of
nullspaces" formula). The classifier is scikit-learn's LinearSVC with ``fit_intercept=False``, as in their runs.
Written here because no maintained package ships INLP; scikit-learn and scipy do the linear algebra."""

from __future__ import annotations

import numpy as np


def rowspace_projection(W: np.ndarray) -> np.ndarray:
    """Orthogonal projection onto the row space of ``W`` ([n_out, dim]); zero for an all-zero ``W``."""
    from scipy.linalg import orth

    W = np.atleast_2d(W)
    if np.allclose(W, 0):
        return np.zeros((W.shape[1], W.shape[1]))
    basis = orth(W.T)
    return basis @ basis.T


def nullspace_intersection(rowspace_projections: list[np.ndarray], dim: int) -> np.ndarray:
    """P = I − P_rowspace(Σ_i P_Ri): the projection onto the intersection of the classifiers' nullspaces."""
    if not rowspace_projections:
        return np.eye(dim)
    return np.eye(dim) - rowspace_projection(np.sum(rowspace_projections, axis=0))


def debiasing_projection(X_train, y_train, X_dev, y_dev, n_classifiers: int, min_accuracy: float = 0.0,
                         by_class: bool = False, seed: int = 0, *, main_train=None, main_dev=None,
                         svc_params: dict | None = None):
    """INLP. ``X_*`` [n, dim] representations, ``y_*`` the protected attribute; ``n_classifiers`` iterations.
    ``by_class`` (the equalized-odds variant cscl uses): each iteration trains on the rows of one task class,
    drawn with a seeded generator from ``main_train`` (task labels; ``main_dev`` for its held-out rows).
    Returns ``(P, rowspace_projections, Ws)``: the final projection [dim, dim], each kept classifier's
    row-space projection and its weights. ``svc_params`` goes to LinearSVC (defaults: the authors' settings)."""
    return debiasing_projections(X_train, y_train, X_dev, y_dev, [n_classifiers], min_accuracy=min_accuracy,
                                 by_class=by_class, seed=seed, main_train=main_train, main_dev=main_dev,
                                 svc_params=svc_params)[n_classifiers]


def debiasing_projections(X_train, y_train, X_dev, y_dev, n_classifiers, *, min_accuracy: float, by_class: bool,
                          seed: int, main_train=None, main_dev=None, svc_params: dict | None = None) -> dict[int, tuple]:
    """:func:`debiasing_projection` for several iteration counts from one run: ``{n: (P, rowspace_projections, Ws)}``
    for each ``n`` in ``n_classifiers``. The first n iterations of a longer run are a run of n — the same seeded
    draws in the same order, each projection computed from the same kept classifiers — so every entry is the array
    :func:`debiasing_projection` with that ``n`` returns, bit for bit (tested), and a grid such as cscl's {20, 50}
    costs one run of 50 iterations instead of 70."""
    from sklearn.svm import LinearSVC

    X_train, X_dev = np.asarray(X_train, dtype=np.float64), np.asarray(X_dev, dtype=np.float64)
    y_train, y_dev = np.asarray(y_train), np.asarray(y_dev)
    if X_train.ndim != 2 or X_dev.ndim != 2 or X_train.shape[1] != X_dev.shape[1]:
        raise ValueError(f"X_train {X_train.shape} and X_dev {X_dev.shape} must be 2-D with the same width")
    if len(np.unique(y_train)) < 2:
        raise ValueError("y_train holds a single protected group: INLP needs at least two")
    if by_class and (main_train is None or main_dev is None):
        raise ValueError("by_class=True needs the task labels: pass main_train= and main_dev=")
    asked = list(n_classifiers)
    if not asked or any(isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1 for n in asked):
        raise ValueError(f"n_classifiers must be whole iteration counts of at least 1, got {asked!r}")
    counts = sorted({int(n) for n in asked})
    rng = np.random.default_rng(seed)
    classes = np.unique(main_train) if by_class else None
    params = {"fit_intercept": False, "class_weight": None, "dual": "auto", "max_iter": 10_000,
              **(svc_params or {})}
    dim = X_train.shape[1]
    P = np.eye(dim)  # = nullspace_intersection(rowspaces, dim) at every point of the loop
    rowspaces, Ws, out = [], [], {}
    for i in range(1, counts[-1] + 1):
        if by_class:
            cls = rng.choice(classes)
            tr, dv = np.asarray(main_train) == cls, np.asarray(main_dev) == cls
            keep = len(np.unique(y_train[tr])) >= 2 and dv.any()  # else this class has one protected group only
        else:
            tr, dv, keep = slice(None), slice(None), True
        if keep:
            clf = LinearSVC(random_state=int(rng.integers(2**31 - 1)), **params)
            clf.fit(X_train[tr] @ P.T, y_train[tr])
            if clf.score(X_dev[dv] @ P.T, y_dev[dv]) >= min_accuracy:
                Ws.append(clf.coef_)
                rowspaces.append(rowspace_projection(clf.coef_))
                P = nullspace_intersection(rowspaces, dim)  # autoregressive: the next classifier sees projected data
        if i in counts:
            out[i] = (P.copy(), list(rowspaces), list(Ws))  # entries never alias, even when no classifier was kept
    return out
