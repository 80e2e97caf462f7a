"""Controlling what the embedder retrieves (Kim et al. 2025, App. "Projecting and Sampling") and the bias
measures on top of it.

* :func:`project` — bias-aware query projection: q_α = q − (q·p / ‖p‖²) p + α (q·p / ‖p‖²) p, p the base
  embedder's (unnormalised, mean-pooled) embedding of the word "female" or "republican"; queries only.
  The public code (``src/rag-projection.py``) does exactly this on GTE's average-pooled output, then ranks the
  corpus by cosine. Cosine ranking is invariant to the scale of q and of p, so projecting the normalised
  sentence-transformers embeddings gives the same ranking.
* :func:`boltzmann` — sampling over the top-N: P(d_i | q) = softmax(cos(q, d_i) / τ) over the N retrieved
  documents; τ = 0 is deterministic top-1.
* :func:`bias_percent` — the paper's bias score, bias1 − bias2 in percent (female − male, conservative −
  liberal), from two judge flags per item, optionally weighted by retrieval probabilities (so a sampling
  setting's *expected* bias is computed exactly instead of from one random draw).
"""

from __future__ import annotations

import numpy as np


def project(queries: np.ndarray, direction: np.ndarray, alpha: float) -> np.ndarray:
    """q − proj_p(q) + α · proj_p(q) for every row of ``queries`` (α = 1 leaves them unchanged)."""
    q = np.asarray(queries, dtype=np.float64)
    p = np.asarray(direction, dtype=np.float64).reshape(-1)
    if q.ndim != 2 or q.shape[1] != p.shape[0]:
        raise ValueError(f"queries {q.shape} and direction {p.shape} do not match")
    denom = float(p @ p)
    if denom == 0.0:
        raise ValueError("the projection direction is the zero vector")
    proj = np.outer(q @ p / denom, p)
    return (q - proj + alpha * proj).astype(np.float32)


def boltzmann(scores: np.ndarray, tau: float) -> np.ndarray:
    """Row-wise softmax(scores / τ); τ = 0 puts all mass on the best score (ties: the first, as in top-1)."""
    s = np.asarray(scores, dtype=np.float64)
    if tau < 0:
        raise ValueError(f"sampling temperature must be >= 0, got {tau}")
    if tau == 0:
        out = np.zeros_like(s)
        out[np.arange(len(s)), np.argmax(s, axis=1)] = 1.0
        return out
    z = s / tau
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def sample(probs: np.ndarray, seed: int) -> np.ndarray:
    """One draw per row (column index), seeded — for a reader that sees a single sampled document."""
    rng = np.random.default_rng(seed)
    cum = np.cumsum(probs, axis=1)
    u = rng.random((len(probs), 1)) * cum[:, -1:]
    return (u > cum).sum(axis=1)


def bias_percent(flag1, flag2, weights=None) -> float:
    """100 · (mean flag1 − mean flag2); with ``weights`` ([n, k] probabilities over k documents per item, flags
    shaped like them), the expectation under those probabilities. NaN for no items."""
    f1 = np.asarray(flag1, dtype=np.float64)
    f2 = np.asarray(flag2, dtype=np.float64)
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != f1.shape or f1.shape != f2.shape:
            raise ValueError(f"weights {w.shape} and flags {f1.shape}, {f2.shape} must have the same shape")
        f1, f2 = (w * f1).sum(axis=1), (w * f2).sum(axis=1)
    if f1.size == 0:
        return float("nan")
    return float(100.0 * (f1.mean() - f2.mean()))


def linear_fit(x, y, confidence: float) -> dict[str, float]:
    """RAG bias ≈ slope · embedder bias + intercept (the paper's "sensitivity" is the slope): least squares with
    R², the slope's standard error and its t-based confidence interval (``scipy.stats.linregress``)."""
    from scipy import stats

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    nan = float("nan")
    if len(x) < 3 or np.ptp(x) == 0:
        return {"n": len(x), "slope": nan, "intercept": nan, "r2": nan, "slope_lo": nan, "slope_hi": nan,
                "p_value": nan}
    res = stats.linregress(x, y)
    t = stats.t.ppf(0.5 + confidence / 2, len(x) - 2)
    return {"n": len(x), "slope": float(res.slope), "intercept": float(res.intercept),
            "r2": float(res.rvalue ** 2), "slope_lo": float(res.slope - t * res.stderr),
            "slope_hi": float(res.slope + t * res.stderr), "p_value": float(res.pvalue)}


def pareto_front(bias, utility) -> np.ndarray:
    """Indices of the points no other point beats on both |bias| (lower is better) and utility (higher is
    better), ordered by |bias|."""
    b = np.abs(np.asarray(bias, dtype=np.float64))
    u = np.asarray(utility, dtype=np.float64)
    order = np.lexsort((-u, b))
    front, best = [], -np.inf
    for i in order:
        if u[i] > best:
            front.append(int(i))
            best = u[i]
    return np.array(front, dtype=int)
