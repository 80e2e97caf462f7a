"""Layer-wise bias probing (ragfair §3.2.2, App. 6.3, Fig. 1).

For a BBQ row with question q, context c and the two named answers, the inputs are x_cq = q ‖ c, the
stereotyped instantiation x_s = q ‖ g_s and the non-stereotyped one x_n = q ‖ g_n (‖ = a space). g_s is the
answer naming the stereotyped group (BBQ's ``target_loc``), g_n the other named answer. Every layer ℓ of the
frozen encoder (index 0 = the embedding layer) gives mean-pooled E_cq, E_s, E_n and

    s_stereo = cos(E_cq, E_s) / τ,   s_non = cos(E_cq, E_n) / τ,
    Bias(ℓ) = (e^{s_stereo} − e^{s_non}) / (e^{s_stereo} + e^{s_non}) = tanh((s_stereo − s_non) / 2)   (eq. 4)

(the tanh form is the same number without overflow). τ is not given in the paper: a parameter, default 0.05,
the temperature of the paper's own contrastive objective. A Ridge probe per layer predicts Bias(ℓ) from E_cq(ℓ)
(k-fold cross-validated R², regularisation chosen by inner CV); the control refits on shuffled targets (the
paper reports the drop). The depth trend is Spearman's ρ between layer index and the mean Bias(ℓ), per category
and averaged (the paper: 0.4842).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats


def probe_inputs(bbq: pd.DataFrame) -> pd.DataFrame:
    """x_cq, x_s, x_n for every row of a BBQ frame (from :func:`biaslab.data.bbq.read_file`)."""
    answers = bbq[["ans0", "ans1", "ans2"]].to_numpy()
    rows = np.arange(len(bbq))
    target = bbq["target_loc"].to_numpy()
    other = 3 - target - bbq["unknown_loc"].to_numpy()  # the remaining named answer
    q = bbq["question"].str.strip()
    return pd.DataFrame({"x_cq": (q + " " + bbq["context"].str.strip()).to_numpy(),
                         "x_s": (q + " " + pd.Series(answers[rows, target], index=bbq.index)).to_numpy(),
                         "x_n": (q + " " + pd.Series(answers[rows, other], index=bbq.index)).to_numpy()},
                        index=bbq.index)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.clip(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12, None)
    b = b / np.clip(np.linalg.norm(b, axis=-1, keepdims=True), 1e-12, None)
    return np.sum(a * b, axis=-1)


def bias_scores(e_cq: np.ndarray, e_s: np.ndarray, e_n: np.ndarray, tau: float) -> np.ndarray:
    """Bias(ℓ) per row and layer from ``[n, layers, d]`` arrays -> ``[n, layers]`` in [−1, 1] (eq. 4)."""
    if tau <= 0:
        raise ValueError(f"probing temperature tau must be > 0, got {tau}")
    return np.tanh((_cos(e_cq, e_s) - _cos(e_cq, e_n)) / (2.0 * tau))


def ridge_probe(X: np.ndarray, y: np.ndarray, *, folds: int, alphas: Sequence[float],
                seed: int, shuffles: int) -> dict[str, float]:
    """Cross-validated R² of a Ridge probe X -> y, and the same probe on label-shuffled y (the control).

    The probe is sklearn's ``make_pipeline(StandardScaler(), RidgeCV(alphas))`` scored by ``cross_val_score`` with
    ``KFold(folds, shuffle=True, random_state=seed)`` and the R² scorer — computed here as that function computes it
    (per fold: fit the scaler on the training rows, RidgeCV on the scaled rows, ``r2_score`` on the held-out rows;
    the mean over folds), with three things done once instead of per call: the folds, each fold's scaling (the same
    for the real and the shuffled targets) and sklearn's input validation (``assume_finite``,
    ``skip_parameter_validation``; the rows are the encoder's finite states). The same numbers, bit for bit
    (``tests/test_ragfair_lib.py`` checks against ``cross_val_score``), 2.5 times faster on a category's 80 rows of
    384-dimensional states."""
    import sklearn
    from sklearn.linear_model import RidgeCV
    from sklearn.metrics import r2_score
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import StandardScaler

    if len(y) < 2 * folds:
        raise ValueError(f"ridge probe needs at least {2 * folds} rows for {folds}-fold CV, got {len(y)}; "
                         "raise ragfair.probing.max_rows_per_category or lower folds")
    rng = np.random.default_rng(seed)
    targets = [np.asarray(y)] + [rng.permutation(y) for _ in range(max(1, shuffles))]  # the real y, then controls
    scores = np.zeros((len(targets), folds))
    with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
        for f, (train, test) in enumerate(KFold(folds, shuffle=True, random_state=seed).split(X)):
            scaler = StandardScaler().fit(X[train])
            x_train, x_test = scaler.transform(X[train]), scaler.transform(X[test])
            for j, target in enumerate(targets):
                model = RidgeCV(alphas=list(alphas)).fit(x_train, target[train])
                scores[j, f] = r2_score(target[test], model.predict(x_test))
    r2 = [float(np.mean(s)) for s in scores]
    return {"r2": r2[0], "r2_shuffled": float(np.mean(r2[1:]))}


def probe_category(layers_cq: np.ndarray, layers_s: np.ndarray, layers_n: np.ndarray, *, tau: float, folds: int,
                   alphas: Sequence[float], seed: int, shuffles: int) -> pd.DataFrame:
    """One row per layer: mean / std Bias(ℓ), probe R² and the shuffled-label control R²."""
    bias = bias_scores(layers_cq, layers_s, layers_n, tau)
    rows = []
    for layer in range(bias.shape[1]):
        res = ridge_probe(layers_cq[:, layer], bias[:, layer], folds=folds, alphas=alphas, seed=seed,
                          shuffles=shuffles)
        rows.append({"layer": layer, "bias_mean": float(bias[:, layer].mean()),
                     "bias_std": float(bias[:, layer].std(ddof=1)) if len(bias) > 1 else 0.0, **res,
                     "n": len(bias)})
    return pd.DataFrame(rows)


def probe_all(bbq: pd.DataFrame, encoder, *, tau: float, folds: int, alphas: Sequence[float], seed: int,
              shuffles: int) -> pd.DataFrame:
    """:func:`probe_category` for every category of ``bbq`` (one encoding pass of all rows): rows (category,
    layer, bias_mean, bias_std, r2, r2_shuffled, n)."""
    inputs = probe_inputs(bbq)
    E = {col: encoder.encode_layers(inputs[col].tolist()) for col in ("x_cq", "x_s", "x_n")}
    frames = []
    for cat, idx in bbq.reset_index(drop=True).groupby("category", sort=True).indices.items():
        t = probe_category(E["x_cq"][idx], E["x_s"][idx], E["x_n"][idx], tau=tau, folds=folds, alphas=alphas,
                           seed=seed, shuffles=shuffles)
        frames.append(t.assign(category=cat))
    return pd.concat(frames, ignore_index=True)[["category", "layer", "bias_mean", "bias_std", "r2", "r2_shuffled",
                                                 "n"]]


def depth_trend(table: pd.DataFrame, value: str = "bias_mean") -> pd.DataFrame:
    """Spearman ρ (and p) between layer index and ``value`` per category (rows: category, layer, value)."""
    out = []
    for cat, g in table.groupby("category", sort=True):
        g = g.sort_values("layer")
        res = stats.spearmanr(g["layer"], g[value])
        out.append({"category": cat, "spearman_rho": float(res.statistic), "p_value": float(res.pvalue),
                    "layers": len(g)})
    return pd.DataFrame(out)
