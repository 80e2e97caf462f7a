"""cscl's settings and contrasts: one (task, method, value)'s test predictions over seeds (:class:`Setting`) and the
evidence for a comparison of settings (:func:`contrast`) — what the claims, the competence table and the
sensitivity study are computed from.

A setting's statistic is its mean over seeds on the fixed test split. A contrast of settings has two sources of
uncertainty: the test rows (a paired bootstrap, the same resampled rows for every setting) and training (the spread
over seeds).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd

from .. import claims as cl
from .. import stats
from ..claims import NAN
from ..metrics.fairness import eo_gaps
from .experiment import top_prediction_share


def fast_f1(y: np.ndarray, p: np.ndarray, *, pos_label=None) -> float:
    """sklearn's ``f1_score`` (``zero_division=0``) on integer labels — binary for ``pos_label``, else the macro mean
    over the labels present in ``y`` or ``p`` — from one confusion count (the bootstrap calls it ~10⁵ times;
    tested equal to sklearn)."""
    labels = np.union1d(y, p)
    k = len(labels)
    yi, pi = np.searchsorted(labels, y), np.searchsorted(labels, p)
    tp = np.bincount(yi[yi == pi], minlength=k).astype(np.float64)
    denom = np.bincount(yi, minlength=k) + np.bincount(pi, minlength=k)  # 2tp + fp + fn
    f1 = np.divide(2 * tp, denom, out=np.zeros(k), where=denom > 0)
    if pos_label is not None:
        i = np.searchsorted(labels, pos_label)
        return float(f1[i]) if i < k and labels[i] == pos_label else 0.0
    return float(f1.mean())


@lru_cache(maxsize=4)
def _resamples(n: int, rounds: int, seed: int) -> np.ndarray:
    """The bootstrap's row resamples, drawn once for every setting and claim that share (n, rounds, seed)."""
    out = stats.resample_indices(n, rounds, seed)
    out.flags.writeable = False
    return out


class Setting:
    """One (task, method, value)'s test predictions, one column per seed, rows in test order."""

    def __init__(self, preds: pd.DataFrame):
        wide = preds.pivot_table(index="row", columns="seed", values="pred", aggfunc="first").sort_index()
        first = preds.drop_duplicates("row").set_index("row").sort_index()
        self.y, self.a, self.pred = first["y"].to_numpy(), first["a"].to_numpy(), wide.to_numpy()
        classes = np.unique(np.concatenate([self.y, self.pred.ravel()]))
        self.binary = len(classes) <= 2
        self.classes = classes[-1:] if self.binary else classes  # fixed on all rows, as equalized_odds_gaps does
        self.names, self.gidx = np.unique(self.a, return_inverse=True)
        self._draws: dict[tuple[str, int, int], np.ndarray] = {}

    def constant_share(self) -> float:
        """The smallest, over seeds, share of test rows given the seed's most frequent prediction (1.0 = every seed
        predicts one class for every row)."""
        return float(min(self.top_shares()))

    def top_shares(self) -> list[float]:
        """Per seed, the share of test rows given the seed's most frequent prediction."""
        return [top_prediction_share(col) for col in self.pred.T]

    def majority(self, label: int) -> Setting:
        """The majority-class classifier on the same rows: ``label`` for every row, in one seed."""
        return Setting(pd.DataFrame({"row": np.arange(len(self.y)), "seed": 0, "y": self.y, "a": self.a,
                                      "pred": np.full(len(self.y), label)}))

    def metric(self, name: str, ix: np.ndarray) -> float:
        """``eo_gap``, ``f1`` or ``macro_f1`` on rows ``ix``, averaged over seeds."""
        return float(np.mean(self.per_seed(name, ix)))

    def draws(self, name: str, rounds: int, seed: int) -> np.ndarray:
        """:meth:`metric` on each of the bootstrap's shared row resamples (:func:`_resamples`), computed once: a
        setting takes part in several claims."""
        key = (name, rounds, seed)
        if key not in self._draws:
            self._draws[key] = np.array([self.metric(name, ix) for ix in _resamples(len(self.y), rounds, seed)])
        return self._draws[key]

    def per_seed(self, name: str, ix: np.ndarray) -> np.ndarray:
        """The metric of every seed on rows ``ix``."""
        values = []
        y, g = self.y[ix], self.gidx[ix]
        for s in range(self.pred.shape[1]):
            p = self.pred[ix, s]
            if name == "eo_gap":
                tpr_gap, fpr_gap, _ = eo_gaps(y, p, g, len(self.names), self.classes)
                values.append(tpr_gap + fpr_gap)
            elif name == "f1":
                values.append(fast_f1(y, p, pos_label=self.classes[-1] if self.binary else None))
            elif name == "macro_f1":
                values.append(fast_f1(y, p))
            else:
                raise ValueError(f"unknown metric {name!r}: eo_gap, f1 or macro_f1")
        return np.asarray(values)


def settings(preds: pd.DataFrame) -> dict[tuple, Setting]:
    """Every (task, method, value)'s predictions as a setting (value −1 for a method without one, as CE)."""
    key = preds["value"].fillna(-1)
    return {(t, m, v): Setting(g) for (t, m, v), g in preds.assign(value=key).groupby(["task", "method", "value"])}


def contrast(terms: list[tuple[Setting, float]], metric: str, *, rounds: int, seed: int) -> cl.Evidence:
    """Σ coef · ``metric`` of the settings in ``terms`` (e.g. [(a, 1), (b, −1)]: a − b), as
    :class:`biaslab.claims.Evidence` with both sources of its uncertainty (Bouthillier et al. 2021, "Accounting for
    variance in machine learning benchmarks"):

    * the test rows — a paired bootstrap over rows (``rounds`` resamples, the same rows for every setting), of the
      seed-mean contrast: the standard error of the statistic for these trained models. ΔEO is a sum of absolute
      gaps, biased upward under resampling, so the bootstrap gives only the spread (never a percentile interval,
      which would miss its own estimate);
    * training — the spread over the k seeds of the per-seed contrast on all rows, s / √k.

    se = √(se_rows² + s² / k), and the interval is the t interval on the Welch–Satterthwaite degrees of freedom of
    that sum (n − 1 for the rows, k − 1 for the seeds; Satterthwaite 1946): close to k − 1 when the seeds dominate,
    to n − 1 when the rows do. The evidence's ``n`` is then the effective units, df + 1 (what the interval, the
    p-value and the MDE use). With one seed, the rows alone: n − 1 degrees of freedom."""
    first = terms[0][0]
    n = len(first.y)
    full = np.arange(n)
    per_seed = [s.per_seed(metric, full) for s, _ in terms]
    k = max(len(v) for v in per_seed)
    seedwise = sum(c * (v if len(v) == k else np.full(k, v.mean())) for (_, c), v in zip(terms, per_seed, strict=True))
    value = float(np.mean(seedwise))
    draws = sum(c * s.draws(metric, rounds, seed) for s, c in terms)
    draws = draws[np.isfinite(draws)]
    rows = float(draws.var(ddof=1)) if len(draws) > 1 else NAN
    if k == 1:
        return cl.Evidence.from_se(value, math.sqrt(rows), n, "test rows (bootstrap)")
    seeds = float(np.var(seedwise, ddof=1)) / k
    total = rows + seeds
    denom = rows ** 2 / (n - 1) + seeds ** 2 / (k - 1)
    df = total ** 2 / denom if denom > 0 else float(n - 1)
    return cl.Evidence.from_se(value, math.sqrt(total), int(df) + 1,
                               f"effective units (Welch–Satterthwaite: {k} seeds, {n} test rows)")


def spread_ratio(a: Setting, b: Setting, metric: str) -> cl.Evidence:
    """How much less ``a``'s ``metric`` (on all test rows) varies over its seeds than ``b``'s: the log ratio of their
    variances, log(s²_a / s²_b) (< 0: ``a`` is the more consistent). Its standard error is the normal-theory
    √(2/(k_a − 1) + 2/(k_b − 1)) and the interval a t on k_a + k_b − 2 degrees of freedom — at 5 seeds each ±2.31 in
    log units at 95 %, against ±2.26 for the exact F interval of a variance ratio (so no narrower than it)."""
    full = np.arange(len(a.y))
    va, vb = a.per_seed(metric, full), b.per_seed(metric, full)
    ka, kb = len(va), len(vb)
    if min(ka, kb) < 2 or min(va.var(ddof=1), vb.var(ddof=1)) <= 0:
        return cl.Evidence.from_se(NAN, NAN, 0, "seeds")
    value = math.log(va.var(ddof=1) / vb.var(ddof=1))
    return cl.Evidence.from_se(value, math.sqrt(2 / (ka - 1) + 2 / (kb - 1)), ka + kb - 1,
                               f"seeds ({ka} and {kb}; log ratio of variances)")


def label(key: tuple) -> str:
    _, method, value = key
    return method if value == -1 else f"{method} (λ = {value:g})"


def checks_of(key: tuple) -> tuple[str, str]:
    """The names of a setting's two competence checks: it predicts more than one class, it beats the majority."""
    task = key[0]
    return (f"{task}: {label(key)} predicts more than one class", f"{task}: {label(key)} beats the majority class")
