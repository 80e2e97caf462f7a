"""SEAT against hand-computed values on tiny inputs, and exact vs sampled permutation p-values."""

from itertools import combinations
from math import comb

import numpy as np
import pytest

from biaslab.metrics.seat import association, effect_size, fairness_score, permutation_p_value, seat

PERM = {"n_samples": 1000, "exact_limit": 100_000, "seed": 0}

# 2-d unit vectors: A = east, B = north. cos(w, A) = w_x, cos(w, B) = w_y for unit w.
A = np.array([[1.0, 0.0]])
B = np.array([[0.0, 1.0]])


def unit(deg):
    r = np.deg2rad(deg)
    return np.array([np.cos(r), np.sin(r)])


def test_association_by_hand():
    W = np.stack([unit(0), unit(90), unit(45)])
    s = association(W, A, B)
    np.testing.assert_allclose(s, [1.0, -1.0, 0.0], atol=1e-12)
    # means over several attribute vectors; non-unit inputs are normalised
    s2 = association(np.array([[2.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 3.0]]), B)
    np.testing.assert_allclose(s2, [0.5 - 0.0], atol=1e-12)


def test_effect_size_by_hand():
    s_x, s_y = np.array([1.0, 0.5]), np.array([-0.5, -1.0])
    # means 0.75 and -0.75; sample std of [1, .5, -.5, -1] = sqrt((1+.25+.25+1... centred at 0)/3)
    std = np.sqrt((1 + 0.25 + 0.25 + 1) / 3)
    assert effect_size(s_x, s_y) == pytest.approx(1.5 / std)
    assert effect_size(s_y, s_x) == pytest.approx(-1.5 / std)
    assert effect_size(np.ones(3), np.ones(3)) == 0.0


def test_exact_p_value_by_hand():
    # s values: X = {3, 2}, Y = {1, 0}. Statistic sum(X) - sum(Y) over the 6 partitions of {0,1,2,3} into two pairs:
    # X sums 5,4,3,3,2,1 -> statistics 4,2,0,0,-2,-4. Observed 4 is the maximum: p = 1/6 (observed counted).
    p, method, n_part, n_eval = permutation_p_value(np.array([3.0, 2.0]), np.array([1.0, 0.0]), **PERM)
    assert (method, n_part, n_eval) == ("exact", 6, 6)
    assert p == pytest.approx(1 / 6)
    # X = {3, 0}: statistic 0; partitions with statistic >= 0: X sums 5, 4, 3 ({3,0}) and 3 ({2,1}) -> 4 of 6
    p2, *_ = permutation_p_value(np.array([3.0, 0.0]), np.array([2.0, 1.0]), **PERM)
    assert p2 == pytest.approx(4 / 6)
    # the least-associated partition has p = 1
    p3, *_ = permutation_p_value(np.array([1.0, 0.0]), np.array([3.0, 2.0]), **PERM)
    assert p3 == pytest.approx(1.0)


def brute_force_p(s_x, s_y):
    allv = np.concatenate([s_x, s_y])
    obs = s_x.sum() - s_y.sum()
    stats_ = []
    for idx in combinations(range(len(allv)), len(s_x)):
        mask = np.zeros(len(allv), bool)
        mask[list(idx)] = True
        stats_.append(allv[mask].sum() - allv[~mask].sum())
    return np.mean(np.array(stats_) >= obs - 1e-12)


def test_exact_matches_brute_force_and_sampled_agrees():
    rng = np.random.default_rng(0)
    s_x, s_y = rng.normal(0.15, 0.3, 7), rng.normal(0.0, 0.3, 7)
    p_exact, method, n_part, _ = permutation_p_value(s_x, s_y, exact_limit=10_000, n_samples=100, seed=0)
    assert method == "exact" and n_part == comb(14, 7)
    assert p_exact == pytest.approx(brute_force_p(s_x, s_y))
    p_sampled, method_s, _, n_eval = permutation_p_value(s_x, s_y, exact_limit=10, n_samples=20_000, seed=1)
    assert method_s == "sampled" and n_eval == 20_000
    # binomial standard error of a proportion estimated from 20k draws
    se = np.sqrt(p_exact * (1 - p_exact) / 20_000)
    assert abs(p_sampled - p_exact) < 5 * se + 1 / 20_000


def test_sampled_is_deterministic_given_seed():
    rng = np.random.default_rng(3)
    s_x, s_y = rng.normal(size=30), rng.normal(size=30)
    a = permutation_p_value(s_x, s_y, n_samples=2000, exact_limit=10, seed=5)
    b = permutation_p_value(s_x, s_y, n_samples=2000, exact_limit=10, seed=5)
    assert a == b


def test_fairness_score_and_full_test():
    assert fairness_score(0.0, e_max=2.0) == 1.0
    assert fairness_score(-1.0, e_max=2.0) == 0.5
    assert fairness_score(2.0, e_max=2.0) == 0.0
    X = np.stack([unit(10), unit(20)])
    Y = np.stack([unit(70), unit(80)])
    r = seat(X, Y, A, B, **PERM, e_max=2.0)
    assert r.effect_size > 0 and r.p_method == "exact" and r.n_partitions == 6
    assert r.p_value == pytest.approx(1 / 6)
    assert r.fairness_score == pytest.approx(1 - abs(r.effect_size) / 2)


def test_zero_vector_is_rejected():
    with pytest.raises(ValueError, match="zero vector"):
        association(np.zeros((1, 2)), A, B)


def _scipy_exact(s_x, s_y):
    from scipy import stats

    return float(stats.permutation_test((s_x, s_y), lambda x, y, axis=-1: x.sum(axis=axis) - y.sum(axis=axis),
                                        permutation_type="independent", vectorized=True, n_resamples=np.inf,
                                        alternative="greater").pvalue)


@pytest.mark.parametrize("nx, ny", [(2, 2), (2, 5), (6, 6), (8, 8), (9, 9), (5, 14)])
def test_exact_p_value_is_scipys(nx, ny):
    # SEAT-like associations (cosine differences), ties within and across the sets (repeated sentences), a set
    # that is all ties, and X against itself: every count must be scipy's exactly
    from biaslab.metrics.seat import exact_p_value

    rng = np.random.default_rng(nx * 100 + ny)
    for trial in range(12):
        s_x, s_y = rng.normal(0, 0.05, nx), rng.normal(0.01 * (trial - 6), 0.05, ny)
        if trial % 3 == 1:  # repeated values
            s_x = rng.choice(s_y, nx)
        if trial % 4 == 2:
            s_x, s_y = np.full(nx, 0.1), np.full(ny, 0.1)
        assert exact_p_value(s_x, s_y) == _scipy_exact(s_x, s_y), (nx, ny, trial)
        assert exact_p_value(s_x, s_y, chunk=97) == exact_p_value(s_x, s_y)  # chunks that do not divide C
    with pytest.raises(ValueError, match="at least two targets per set"):
        permutation_p_value(np.array([0.1]), np.array([0.2, 0.3]), **PERM)


def test_exact_p_value_on_real_sizes_is_scipys():
    # a sent-bias test's size (C(18, 9) = 48,620 partitions) from real-looking associations
    from biaslab.metrics.seat import exact_p_value

    rng = np.random.default_rng(3)
    X, Y, A, B = (rng.normal(size=(k, 32)) + 0.2 for k in (9, 9, 8, 8))
    s_x, s_y = association(X, A, B), association(Y, A, B)
    assert exact_p_value(s_x, s_y) == _scipy_exact(s_x, s_y)
    assert exact_p_value(s_y, s_x) == _scipy_exact(s_y, s_x)


@pytest.mark.parametrize("nx, ny, n_samples", [(10, 10, 5000), (8, 25, 30_001), (3, 40, 1000)])
def test_sampled_p_value_is_scipys_with_the_same_seed(nx, ny, n_samples):
    # the same random partitions from the same stream, in chunks that do not divide n_samples
    from scipy import stats

    from biaslab.metrics.seat import sampled_p_value

    rng = np.random.default_rng(nx + ny)
    for seed in (0, 11):
        s_x, s_y = rng.normal(0.01, 0.05, nx), rng.normal(0, 0.05, ny)
        s_x[:2] = s_y[:2]  # ties
        ref = stats.permutation_test((s_x, s_y), lambda x, y, axis=-1: x.sum(axis=axis) - y.sum(axis=axis),
                                     permutation_type="independent", vectorized=True, n_resamples=n_samples,
                                     alternative="greater", rng=np.random.default_rng(seed)).pvalue
        assert sampled_p_value(s_x, s_y, n_samples=n_samples, seed=seed, chunk=7_000) == float(ref)
