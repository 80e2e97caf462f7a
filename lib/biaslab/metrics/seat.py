"""SEAT — the Sentence Encoder Association Test (May et al., 2019), as used in ragfair §3.2.1.

For target sets X, Y and attribute sets A, B of embeddings:

* association (ragfair eq. 1): s(w, A, B) = mean_{a∈A} cos(w, a) − mean_{b∈B} cos(w, b)
* effect size (eq. 2): (mean_{x∈X} s(x) − mean_{y∈Y} s(y)) / std_{w∈X∪Y} s(w), with the *sample* standard
  deviation (ddof = 1), as in the reference implementation (W4ngatang/sent-bias ``weat.py``)
* one-sided permutation p-value of the test statistic Σ_{x∈X} s(x) − Σ_{y∈Y} s(y) over re-partitions of
  X ∪ Y into sets of sizes |X| and |Y|: exact when the number of partitions C(|X|+|Y|, |X|) is at most
  ``exact_limit`` (reference: 100,000), otherwise ``n_samples`` random partitions
* fairness score (eq. 3): 1 − |ES| / E_max with E_max = 2.

The permutation test gives the p-values of scipy's ``permutation_test`` (independent samples, alternative
"greater"), computed in array operations rather than scipy's per-partition Python loop (:func:`exact_p_value`,
:func:`sampled_p_value`; tests compare the two). One difference from the reference code, on purpose: scipy counts
re-partitions whose statistic is *at least* the observed one (the observed partition included), the reference only
those strictly greater. The exact
p-value is therefore never 0 here (its minimum is 1 / C(|X|+|Y|, |X|)), which is the textbook exact test;
for the sampled test both add one pseudo-observation, p = (b + 1) / (n + 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np


@dataclass(frozen=True)
class SeatResult:
    effect_size: float
    p_value: float
    p_method: str  # "exact" | "sampled"
    n_partitions: int  # C(|X|+|Y|, |X|)
    n_resamples: int  # partitions evaluated
    mean_s_x: float
    mean_s_y: float
    fairness_score: float


def _unit(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("zero vector among the SEAT embeddings: cosine similarity is undefined")
    return m / norms


def association(W: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """s(w, A, B) for every row w of ``W`` (eq. 1)."""
    W, A, B = _unit(W), _unit(A), _unit(B)
    return (W @ A.T).mean(axis=1) - (W @ B.T).mean(axis=1)


def effect_size(s_x: np.ndarray, s_y: np.ndarray) -> float:
    """Eq. 2 on precomputed associations; sample std over X ∪ Y (ddof = 1)."""
    s_x, s_y = np.asarray(s_x, float), np.asarray(s_y, float)
    spread = np.std(np.concatenate([s_x, s_y]), ddof=1)
    if spread == 0:
        return 0.0
    return float((s_x.mean() - s_y.mean()) / spread)


def _statistic(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return x.sum(axis=axis) - y.sum(axis=axis)


def _count_at_least(s_x: np.ndarray, s_y: np.ndarray, orders) -> int:
    """How many re-partitions have a statistic at least the observed one, less scipy's tolerance for numerically
    distinct but theoretically equal values (100 ε |observed|). ``orders``: ``[rows, n]`` index matrices into the
    concatenated sample, X's part first — each row summed in the layout scipy's ``permutation_test`` sums it in."""
    z, nx = np.concatenate([s_x, s_y]), len(s_x)
    observed = _statistic(s_x, s_y)
    threshold = observed - abs(np.finfo(float).eps * 100 * observed)
    count = 0
    for order in orders:
        data = z[order]
        count += int(np.count_nonzero(_statistic(data[:, :nx], data[:, nx:]) >= threshold))
    return count


def exact_p_value(s_x: np.ndarray, s_y: np.ndarray, *, chunk: int = 50_000) -> float:
    """The exact one-sided permutation p-value, as scipy's ``permutation_test`` computes it for independent
    samples with ``alternative="greater"`` and every partition enumerated: the share of the C(|X|+|Y|, |X|)
    re-partitions of X ∪ Y whose statistic Σ x − Σ y is at least the observed one, less scipy's tolerance for
    numerically distinct but theoretically equal values (100 ε |observed|).

    Why not scipy itself: it builds each partition in Python from sets, the largest part of a bias card's work
    between its forward passes. Here the partitions come from ``itertools.combinations``, ``chunk`` at a time (X's
    indices ascending, Y's the ascending rest), and every chunk's statistics are one array operation, each
    partition's elements summed in the layout scipy sums them in (one row of the concatenated sample, X's part then
    Y's): about 20 times faster for C(16, 8) partitions. A partition's sum can differ from scipy's in the last bit
    only if scipy lists its elements in another order, and no count moves unless a null value lies within a few
    units in the last place of the tolerance's edge; ``tests/test_seat.py`` checks the p-values against scipy's on
    random, tied and real-size sets."""
    from itertools import chain, combinations, islice

    s_x, s_y = np.asarray(s_x, float), np.asarray(s_y, float)
    nx, n = len(s_x), len(s_x) + len(s_y)
    partitions = combinations(range(n), nx)

    def orders():  # each partition's X indices, then the rest
        while len(x_idx := np.fromiter(chain.from_iterable(islice(partitions, chunk)), dtype=np.intp).reshape(-1, nx)):
            rest = np.ones((len(x_idx), n), dtype=bool)
            rest[np.arange(len(x_idx))[:, None], x_idx] = False
            yield np.concatenate([x_idx, np.nonzero(rest)[1].reshape(len(x_idx), n - nx)], axis=1)

    return float(_count_at_least(s_x, s_y, orders()) / comb(n, nx))


def sampled_p_value(s_x: np.ndarray, s_y: np.ndarray, *, n_samples: int, seed: int,
                    chunk: int = 20_000) -> float:
    """The sampled one-sided permutation p-value as scipy's ``permutation_test`` computes it with
    ``n_resamples=n_samples`` and ``rng=np.random.default_rng(seed)`` (independent samples, ``alternative="greater"``):
    (b + 1) / (n + 1), b the random re-partitions whose statistic is at least the observed one less scipy's tolerance.
    scipy draws one ``rng.permutation`` per resample in a Python loop; ``Generator.permuted`` along the rows of a
    ``chunk``-row matrix draws the same permutations from the same stream in one call, and each statistic is summed
    in scipy's layout — the same p-value (``tests/test_seat.py``), about four times faster (100,000 partitions of
    25 + 25 targets)."""
    s_x, s_y = np.asarray(s_x, float), np.asarray(s_y, float)
    n = len(s_x) + len(s_y)
    rng = np.random.default_rng(seed)
    orders = (rng.permuted(np.tile(np.arange(n), (min(chunk, n_samples - start), 1)), axis=-1)
              for start in range(0, n_samples, chunk))  # drawn lazily, in order: the stream scipy draws
    return float(min(1.0, (_count_at_least(s_x, s_y, orders) + 1) / (n_samples + 1)))


def permutation_p_value(s_x: np.ndarray, s_y: np.ndarray, *, n_samples: int,
                        exact_limit: int, seed: int) -> tuple[float, str, int, int]:
    """One-sided p-value that X associates with A more than Y does. Returns (p, method, C, n evaluated): exact
    (:func:`exact_p_value`) when C ≤ ``exact_limit``, else on ``n_samples`` random partitions
    (:func:`sampled_p_value`): both the p-values of scipy's ``permutation_test``."""
    s_x, s_y = np.asarray(s_x, float), np.asarray(s_y, float)
    if min(len(s_x), len(s_y)) < 2:
        raise ValueError(f"a SEAT permutation test needs at least two targets per set, got |X| = {len(s_x)}, "
                         f"|Y| = {len(s_y)}")
    n_partitions = comb(len(s_x) + len(s_y), len(s_x))
    if n_partitions <= exact_limit:
        return exact_p_value(s_x, s_y), "exact", n_partitions, n_partitions
    return sampled_p_value(s_x, s_y, n_samples=n_samples, seed=seed), "sampled", n_partitions, n_samples


def fairness_score(es: float, e_max: float) -> float:
    """ragfair eq. 3: 1 − |ES| / E_max (1 = no measured association)."""
    return 1.0 - abs(es) / e_max


def seat(X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray, *, n_samples: int,
         exact_limit: int, e_max: float, seed: int) -> SeatResult:
    """The full test on embeddings of the four sets."""
    s_x, s_y = association(X, A, B), association(Y, A, B)
    es = effect_size(s_x, s_y)
    p, method, n_part, n_eval = permutation_p_value(s_x, s_y, n_samples=n_samples,
                                                    exact_limit=exact_limit, seed=seed)
    return SeatResult(es, p, method, n_part, n_eval, float(s_x.mean()), float(s_y.mean()),
                      fairness_score(es, e_max))
