"""Uncertainty for every headline number — one helper for all five papers.

* :func:`ci_mean` — a mean over evaluation units (paragraphs, questions, BBQ rows, queries) with a bootstrap
  confidence interval (``scipy.stats.bootstrap``). Most of the papers' scores are such means: Jaccard per
  paragraph, a bias score per question (+100 when the answer is on the bias1 side, −100 on the bias2 side, 0
  otherwise: their mean is the paper's bias1 − bias2 percentage), MRR per query.
* :func:`ci_statistic` — any statistic of a resample of the units (a group gap such as SPD or EOD over BBQ rows, a
  regression slope over questions, a correlation across checkpoints), by resampling unit indices, optionally within
  strata (e.g. BBQ categories). scipy's bootstrap takes arrays, not frames, hence this small loop.
* :func:`paired` — "method beats baseline" on the same units: the mean paired difference with its bootstrap
  interval and a two-sided paired permutation test (sign flips, ``scipy.stats.permutation_test``).
* :func:`over_seeds` — mean, standard deviation and a t interval over training seeds.
* :func:`mean_ci` / :func:`paired_mean_ci` — the interval for a mean over few units (seeds, checkpoints, 15–30
  queries), valid at small n: Student's t. A percentile bootstrap over 5 or 10 units covers the true mean far less
  often than it promises (it ignores the uncertainty of the spread); the t interval keeps its coverage for normal
  units and is close for the mildly skewed means these units are. :func:`mde` and :func:`units_for_effect` say how
  large an effect a number of units resolves, and how many units an effect needs (80 % power by default).

Every function returns an :class:`Estimate` (value, interval, n, method), seeded from the arguments: the same
inputs give the same interval. The number of resamples and the confidence level are ``common.uncertainty`` in
params.yaml.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Estimate:
    value: float
    ci_low: float
    ci_high: float
    n: int
    method: str
    p_value: float | None = None  # of a paired test, when the estimate is a difference

    def as_dict(self, prefix: str = "") -> dict:
        return {f"{prefix}{k}": v for k, v in asdict(self).items() if not (k == "p_value" and v is None)}

    def excludes(self, x: float) -> bool:
        """Whether the interval lies entirely on one side of ``x``."""
        return bool(self.ci_low > x or self.ci_high < x)


def _nan(n: int, method: str) -> Estimate:
    return Estimate(float("nan"), float("nan"), float("nan"), n, method)


def ci_mean(values: Sequence[float], *, rounds: int, confidence: float, seed: int,
            method: str = "percentile") -> Estimate:
    """The mean of ``values`` (NaNs dropped) and its bootstrap interval. A constant sample has a zero-width
    interval; fewer than two values give NaN bounds."""
    from scipy import stats

    x = _finite_values(values)
    if len(x) == 0:
        return _nan(0, f"bootstrap-{method}")
    mean = float(x.mean())
    if len(x) < 2:
        return Estimate(mean, float("nan"), float("nan"), len(x), f"bootstrap-{method}")
    if np.ptp(x) == 0:
        return Estimate(mean, mean, mean, len(x), f"bootstrap-{method}")
    res = stats.bootstrap((x,), np.mean, n_resamples=rounds, confidence_level=confidence, method=method,
                          rng=np.random.default_rng(seed), vectorized=True)
    return Estimate(mean, float(res.confidence_interval.low), float(res.confidence_interval.high), len(x),
                    f"bootstrap-{method}")


def resample_indices(n: int, rounds: int, seed: int, strata: Sequence | None = None) -> np.ndarray:
    """``[rounds, n]`` indices drawn with replacement (within each stratum when ``strata`` is given, so every
    resample keeps the strata sizes)."""
    rng = np.random.default_rng(seed)
    if strata is None:
        return rng.integers(0, n, size=(rounds, n))
    strata = np.asarray(strata)
    out = np.empty((rounds, n), dtype=np.int64)
    for s in dict.fromkeys(strata.tolist()):
        idx = np.flatnonzero(strata == s)
        out[:, idx] = idx[rng.integers(0, len(idx), size=(rounds, len(idx)))]
    return out


def _draws(statistic: Callable[[np.ndarray], float], resamples: np.ndarray, vectorized: bool) -> np.ndarray:
    if vectorized:
        return np.asarray(statistic(resamples), dtype=np.float64)
    return np.array([statistic(ix) for ix in resamples], dtype=np.float64)


def ci_statistic(n_units: int, statistic: Callable[[np.ndarray], float], *, rounds: int, confidence: float,
                 seed: int, strata: Sequence | None = None, vectorized: bool = False) -> Estimate:
    """``statistic(indices)`` on all units and its percentile bootstrap interval over ``rounds`` resamples of unit
    indices (within ``strata`` when given). Resamples on which the statistic is undefined (NaN) are dropped.
    ``vectorized``: the statistic also takes a ``[rounds, n]`` matrix of resamples and returns one value per row
    (the same values it gives each row alone), and gets them in one call."""
    value = float(statistic(np.arange(n_units)))
    if n_units < 2:
        return Estimate(value, float("nan"), float("nan"), n_units, "bootstrap-percentile")
    lo, hi = percentile_interval(_draws(statistic, resample_indices(n_units, rounds, seed, strata), vectorized),
                                 confidence)
    return Estimate(value, lo, hi, n_units, "bootstrap-percentile")


def percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` share of bootstrap ``draws`` (undefined draws, NaN, dropped; NaN bounds when none
    is left): the percentile interval of :func:`ci_statistic`."""
    draws = np.asarray(draws, dtype=np.float64)
    draws = draws[np.isfinite(draws)]
    if len(draws) == 0:
        return float("nan"), float("nan")
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.percentile(draws, [tail, 100 - tail])
    return float(lo), float(hi)


def paired_statistic(n_units: int, a: Callable[[np.ndarray], float], b: Callable[[np.ndarray], float], *,
                     rounds: int, confidence: float, seed: int, strata: Sequence | None = None,
                     vectorized: bool = False) -> Estimate:
    """a(indices) − b(indices) for two systems measured on the same units (e.g. SPD of a debiased checkpoint and of
    the baseline over the same BBQ rows): the difference on all units, its percentile bootstrap interval from
    resampling the units once for both systems, and a two-sided bootstrap p-value (twice the smaller share of
    resampled differences on either side of 0). ``vectorized``: as :func:`ci_statistic`'s, for both statistics."""
    full = np.arange(n_units)
    value = float(a(full) - b(full))
    resamples = resample_indices(n_units, rounds, seed, strata)
    draws = _draws(a, resamples, vectorized) - _draws(b, resamples, vectorized)
    lo, hi = percentile_interval(draws, confidence)
    draws = draws[np.isfinite(draws)]
    p = float(min(1.0, 2 * min((draws <= 0).mean(), (draws >= 0).mean()))) if len(draws) else float("nan")
    return Estimate(value, lo, hi, n_units, "paired-bootstrap", p)


def paired(a: Sequence[float], b: Sequence[float], *, rounds: int, confidence: float, seed: int) -> Estimate:
    """mean(a − b) over units measured under both conditions, its bootstrap interval and the two-sided p-value of
    a paired sign-flip permutation test (:func:`permutation_p`)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.shape} vs {b.shape}")
    ok = np.isfinite(a) & np.isfinite(b)
    est = ci_mean(a[ok] - b[ok], rounds=rounds, confidence=confidence, seed=seed)
    p = permutation_p(a[ok], b[ok], lambda x, y, axis: np.mean(x - y, axis=axis), rounds=rounds, seed=seed)
    return Estimate(est.value, est.ci_low, est.ci_high, est.n, "paired-bootstrap+sign-flip", p)


def permutation_p(a: Sequence[float], b: Sequence[float], statistic: Callable[..., np.ndarray], *, rounds: int,
                  seed: int) -> float:
    """Two-sided p-value of a paired randomisation test: ``statistic(x, y, axis)`` (vectorised along ``axis``) of
    two systems' values on the same units, against its values when each unit's two values are swapped at random
    (the sign-flip test when the statistic is a mean difference; the randomisation test of IR system comparisons,
    Smucker, Allan & Carterette 2007). scipy's ``permutation_test``: exact when 2^n ≤ ``rounds``, else ``rounds``
    random swaps with the +1 correction of a sampled test, so a sampled p is never below 1 / (rounds + 1) per side.
    1 when every unit has equal values; NaN with no unit."""
    from scipy import stats

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.shape} vs {b.shape}")
    if len(a) < 2 or np.all(a - b == 0):
        return 1.0 if len(a) else float("nan")
    res = stats.permutation_test((a, b), statistic, permutation_type="samples", vectorized=True, n_resamples=rounds,
                                 alternative="two-sided", rng=np.random.default_rng(seed + 1))
    return float(res.pvalue)


def adjust_p(p_values: Sequence[float], method: str) -> np.ndarray:
    """Multiple-comparison adjusted p-values of a family of tests: ``bh`` (Benjamini–Hochberg, the false discovery
    rate under independence or positive dependence), ``by`` (Benjamini–Yekutieli, under any dependence) — scipy's
    ``false_discovery_control`` —, ``holm`` (Holm's step-down, the family-wise error rate under any dependence:
    statsmodels' ``multipletests``) or ``none``. NaN entries (no test) stay NaN and are not counted."""
    from scipy import stats

    p = np.asarray(p_values, dtype=np.float64)
    if method not in ("bh", "by", "holm", "none"):
        raise ValueError(f"unknown p-value adjustment {method!r}: use bh, by, holm or none")
    out = p.copy()
    ok = np.isfinite(p)
    if method == "holm" and ok.any():
        from statsmodels.stats.multitest import multipletests

        out[ok] = multipletests(p[ok], method="holm")[1]
    elif method in ("bh", "by") and ok.any():
        out[ok] = stats.false_discovery_control(p[ok], method=method)
    return out


def over_seeds(values: Sequence[float], *, confidence: float) -> Estimate:
    """Mean over seeds with :func:`mean_ci`'s t interval (and the standard deviation in ``method``)."""
    x = _finite_values(values)
    if len(x) == 0:
        return _nan(0, "seeds")
    mean = float(x.mean())
    if len(x) < 2:
        return Estimate(mean, float("nan"), float("nan"), 1, "seeds (1: no interval)")
    low, high = mean_ci(x, level=confidence)
    return Estimate(mean, low, high, len(x), f"seeds t-interval (sd {float(x.std(ddof=1)):.4g})")


def _finite_values(values: Sequence[float]) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    return x[np.isfinite(x)]


def mean_ci(values: Sequence[float], level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """(low, high): the two-sided Student-t interval at ``level`` for the mean of ``values`` (NaNs dropped) — the
    mean ± t(1 − (1 − level)/2, n − 1) · s / √n. Valid at small n (seeds, checkpoints, queries): its coverage on
    normal samples is ``level`` exactly (a test simulates n = 5 and 10). NaN bounds below two values; a constant
    sample gives a zero-width interval. ``seed`` is unused by the t interval (it has no randomness) and kept so
    every interval function of this module takes one."""
    del seed
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    x = _finite_values(values)
    if len(x) < 2:
        return float("nan"), float("nan")
    return t_interval(float(x.mean()), float(x.std(ddof=1)), len(x), level)


def t_interval(mean: float, sd: float, n: int, level: float) -> tuple[float, float]:
    """The Student-t interval of :func:`mean_ci` from a mean, a standard deviation and a count (NaN bounds below two
    units or for an undefined spread); :class:`biaslab.claims.Evidence` keeps only these three."""
    from scipy import stats

    if n < 2 or not np.isfinite(sd):
        return float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / np.sqrt(n)
    return mean - half, mean + half


def paired_mean_ci(a: Sequence[float], b: Sequence[float], level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """:func:`mean_ci` of the differences ``a − b`` of paired units (the same seed, query or checkpoint in both);
    a unit missing from either side is dropped."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired values need the same units: {a.shape} against {b.shape}")
    return mean_ci(a - b, level=level, seed=seed)


def mde(sd: float, n: int, *, level: float = 0.95, power: float = 0.8) -> float:
    """The minimum detectable effect: the smallest true mean difference that a two-sided one-sample (or paired) t
    test at ``1 − level`` rejects with probability ``power`` on ``n`` units whose spread is ``sd`` — statsmodels'
    ``TTestPower`` solved for the effect size, times ``sd``. NaN below two units or for an undefined spread."""
    from statsmodels.stats.power import TTestPower

    if n < 2 or not np.isfinite(sd):
        return float("nan")
    if sd == 0:
        return 0.0
    d = TTestPower().solve_power(effect_size=None, nobs=n, alpha=1 - level, power=power, alternative="two-sided")
    return float(d) * float(sd)


def units_for_effect(sd: float, effect: float, *, level: float = 0.95, power: float = 0.8) -> int | None:
    """The fewest units at which :func:`mde` reaches ``|effect|`` (how much more data a claim needs); None when the
    effect or the spread is undefined or the effect is 0."""
    from statsmodels.stats.power import TTestPower

    if not (np.isfinite(sd) and np.isfinite(effect)) or effect == 0:
        return None
    if sd == 0:
        return 2
    import warnings

    from scipy import stats

    d = abs(effect) / sd
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' ConvergenceWarning where the solver fails; handled below
        at_two = TTestPower().power(effect_size=d, nobs=2, alpha=1 - level, alternative="two-sided")
        n = np.nan if at_two >= power else TTestPower().solve_power(effect_size=d, nobs=None, alpha=1 - level,
                                                                     power=power, alternative="two-sided")
    if at_two >= power:
        return 2  # two units already detect it (the solver has no answer below two)
    if not np.isfinite(n):  # an effect many times the spread, where the noncentral t overflows: the normal answer
        n = ((stats.norm.ppf(0.5 + level / 2) + stats.norm.ppf(power)) / d) ** 2 + 1
    return max(2, int(np.ceil(n)))


def side_scores(sides: Sequence[str | None], groups: tuple[str, str]) -> np.ndarray:
    """Per-answer bias scores whose mean is ragcontrol's RAG bias (bias1 − bias2, in percent): +100 for an answer
    on the bias1 side, −100 on the bias2 side, 0 for neither."""
    s = np.array([x if x is not None else "" for x in sides], dtype=object)
    return np.where(s == groups[0], 100.0, np.where(s == groups[1], -100.0, 0.0))


def flag_scores(flag1: Sequence[bool], flag2: Sequence[bool]) -> np.ndarray:
    """Per-document scores whose mean is ragcontrol's embedder bias: 100 · (flag1 − flag2)."""
    return 100.0 * (np.asarray(flag1, dtype=np.float64) - np.asarray(flag2, dtype=np.float64))
