"""The shared uncertainty helper and the claim verdicts."""

import itertools

import numpy as np
import pandas as pd
import pytest

from biaslab import claims, stats

B = {"rounds": 2000, "confidence": 0.95, "seed": 0}


def test_ci_mean_covers_the_mean_and_shrinks_with_n():
    rng = np.random.default_rng(1)
    small = stats.ci_mean(rng.normal(1.0, 1.0, 30), **B)
    large = stats.ci_mean(rng.normal(1.0, 1.0, 3000), **B)
    assert small.ci_low < small.value < small.ci_high and large.ci_low < 1.0 < large.ci_high
    assert (large.ci_high - large.ci_low) < (small.ci_high - small.ci_low) / 5
    # a normal-theory check: the 95 % interval of a mean of 3,000 N(1, 1) draws is about ±0.036
    assert (large.ci_high - large.ci_low) / 2 == pytest.approx(1.96 / np.sqrt(3000), rel=0.15)
    x = rng.normal(size=50)
    assert stats.ci_mean(x, **B) == stats.ci_mean(x, **B)  # seeded


def test_ci_mean_edge_cases():
    assert stats.ci_mean([2.0, 2.0, 2.0], **B) == stats.Estimate(2.0, 2.0, 2.0, 3, "bootstrap-percentile")
    one = stats.ci_mean([5.0, float("nan")], **B)
    assert one.value == 5.0 and one.n == 1 and np.isnan(one.ci_low)
    assert stats.ci_mean([], **B).n == 0


def test_ci_statistic_stratified_keeps_strata_sizes():
    strata = np.array(["a"] * 3 + ["b"] * 7)
    idx = stats.resample_indices(10, 50, seed=0, strata=strata)
    assert idx.shape == (50, 10) and (strata[idx] == strata).all()
    values = np.r_[np.zeros(3), np.ones(7)]
    est = stats.ci_statistic(10, lambda ix: values[ix].mean(), **B, strata=strata)
    assert est.value == est.ci_low == est.ci_high == 0.7  # within-stratum resampling keeps the mix fixed
    loose = stats.ci_statistic(10, lambda ix: values[ix].mean(), **B)
    assert loose.ci_low < 0.7 < loose.ci_high


def test_paired_difference_and_test():
    rng = np.random.default_rng(2)
    base = rng.normal(size=80)
    better = base + 0.5 + rng.normal(scale=0.1, size=80)
    est = stats.paired(better, base, **B)
    assert est.value == pytest.approx(0.5, abs=0.05) and est.ci_low > 0 and est.p_value < 0.01
    same = stats.paired(base, base, **B)
    assert same.value == 0 and same.p_value == 1.0
    noise = stats.paired(base + rng.normal(scale=0.5, size=80), base, **B)
    assert noise.p_value < 1.0 and noise.ci_low < noise.value < noise.ci_high
    with pytest.raises(ValueError, match="differ in length"):
        stats.paired([1, 2], [1], **B)


def test_over_seeds_t_interval():
    est = stats.over_seeds([1.0, 2.0, 3.0], confidence=0.95)
    assert est.value == 2.0 and est.ci_high - est.value == pytest.approx(4.303 * 1.0 / np.sqrt(3), rel=1e-3)
    assert np.isnan(stats.over_seeds([1.0], confidence=0.95).ci_low)


def test_bias_scores_average_to_the_papers_percentages():
    s = stats.side_scores(["female", "male", None, "female"], ("female", "male"))
    assert s.mean() == pytest.approx(100 * (2 / 4 - 1 / 4))
    f = stats.flag_scores([True, True, False], [False, True, True])
    assert f.mean() == pytest.approx(100 * (2 / 3 - 2 / 3))


def _two_rows():
    """A claim whose interval lies above 0 and a no-change claim wholly outside its bound."""
    up = claims.effect("a beats b", "§1", "higher", claims.Evidence(0.3, 0.2, 40, "queries"), direction=1)
    moved = claims.no_change("c changes nothing", "§2", "0", claims.Evidence(0.3, 0.2, 40, "queries"), bound=0.05)
    return claims.finalize([up, moved], level=0.95)


def test_claims_table_and_summary(tmp_path):
    df = claims.write(tmp_path / "claims.csv", _two_rows())
    assert list(df.columns) == claims.COLUMNS
    assert claims.summary(df) == {"reproduced": 1, "contradicted": 1}
    assert (tmp_path / "claims.csv").read_text().splitlines()[0] == ",".join(claims.COLUMNS)
    with pytest.raises(ValueError, match="unknown verdicts"):
        claims.table([claims.Claim("x", "§", "1", 1.0, 0.0, 2.0, "inconclusive", "")])


def test_paired_statistic_uses_the_same_resample_for_both_systems():
    x = np.r_[np.zeros(50), np.ones(50)]
    same = stats.paired_statistic(100, lambda ix: x[ix].mean(), lambda ix: x[ix].mean(), **B)
    assert (same.value, same.ci_low, same.ci_high) == (0.0, 0.0, 0.0)  # identical systems: no spread at all
    shifted = stats.paired_statistic(100, lambda ix: x[ix].mean() + 0.2, lambda ix: x[ix].mean(), **B)
    assert shifted.ci_low == pytest.approx(0.2) and shifted.p_value == 0.0
    y = np.random.default_rng(0).random(100)
    noisy = stats.paired_statistic(100, lambda ix: y[ix].mean(), lambda ix: x[ix].mean(), **B)
    assert noisy.ci_low < noisy.value < noisy.ci_high and 0 <= noisy.p_value <= 1


def test_permutation_p_is_the_exact_swap_test_when_it_can_be_enumerated_and_never_zero_when_sampled():
    a, b = np.array([3.0, 1.0, 4.0, 1.5]), np.array([1.0, 2.0, 0.5, 1.0])

    def stat(x, y, axis=-1):
        return np.abs(np.mean(x, axis=axis)) - np.abs(np.mean(y, axis=axis))

    observed = stat(a, b)
    swapped = []  # every way of swapping some units' two values: 2^4 assignments
    for flips in itertools.product([False, True], repeat=4):
        f = np.array(flips)
        swapped.append(stat(np.where(f, b, a), np.where(f, a, b)))
    swapped = np.array(swapped)
    exact = min(1.0, 2 * min((swapped >= observed - 1e-12).mean(), (swapped <= observed + 1e-12).mean()))
    assert stats.permutation_p(a, b, stat, rounds=16, seed=0) == pytest.approx(exact)  # 2^4 <= rounds: exact
    shift = stats.permutation_p(np.arange(40.0) + 5, np.arange(40.0), stat, rounds=999, seed=0)
    assert shift == pytest.approx(2 / 1000)  # sampled: the observed arrangement counts, so p > 0
    assert stats.permutation_p([1.0, 2.0], [1.0, 2.0], stat, rounds=99, seed=0) == 1.0
    assert np.isnan(stats.permutation_p([], [], stat, rounds=99, seed=0))
    with pytest.raises(ValueError, match="differ in length"):
        stats.permutation_p([1.0, 2.0], [1.0], stat, rounds=99, seed=0)


def test_adjust_p_benjamini_hochberg_by_hand_nan_left_out():
    p = np.array([0.01, np.nan, 0.04, 0.03, 0.5])
    # BH over the 4 tests: sorted 0.01, 0.03, 0.04, 0.5 -> p * 4 / rank, then the running minimum from the top
    q = stats.adjust_p(p, "bh")
    assert np.isnan(q[1]) and q[[0, 3, 2, 4]] == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    assert (stats.adjust_p(p, "by")[[0, 2, 3, 4]] >= q[[0, 2, 3, 4]]).all()  # BY is the more cautious
    assert np.array_equal(stats.adjust_p(p, "none"), p, equal_nan=True)
    assert np.isnan(stats.adjust_p([np.nan], "bh")).all()
    with pytest.raises(ValueError, match="bh, by, holm or none"):
        stats.adjust_p(p, "sidak")


def test_claims_round_trip_and_markdown(tmp_path):
    claims.write(tmp_path / "claims.csv", _two_rows())
    back = claims.read(tmp_path / "claims.csv")
    assert back["verdict"].tolist() == ["reproduced", "contradicted"]
    md = claims.markdown(back)
    assert md.splitlines()[0] == "1 reproduced, 1 contradicted"
    assert "| a beats b | claim | §1 | higher | 0.3 [" in md
    (tmp_path / "bad.csv").write_text("claim,verdict\nx,reproduced\n")
    with pytest.raises(ValueError, match="missing columns"):
        claims.read(tmp_path / "bad.csv")


# ------------------------------------------------------------------------------ magnitude-aware verdicts
@pytest.mark.parametrize("direction", [1, -1])
def test_verdict_truth_table_both_directions(direction):
    """Each outcome for a paper's effect of size 1 on its own side of the null (2.0), mirrored for a decrease."""
    null = 2.0

    def v(lo, hi, effect=1.0, **kw):  # an interval given along the paper's direction, mapped to our units
        a, b = sorted((null + direction * lo, null + direction * hi))
        return claims.verdict(a, b, paper_effect=None if effect is None else null + direction * effect, null=null,
                              direction=direction, **kw)

    assert v(0.5, 1.5) == "reproduced"  # excludes the null, reaches the paper's effect
    assert v(1.2, 3.0) == "reproduced"  # beyond it
    assert v(0.1, 0.6) == "reproduced_smaller"  # wholly between the null and the paper's effect
    assert v(-0.3, 0.4) == "ruled_out"  # includes the null, excludes an effect as large as the paper's
    assert v(-0.3, 1.4) == "underpowered"  # includes both
    assert v(-0.9, -0.2) == "contradicted"  # the other side
    assert v(0.1, 0.6, effect=None) == "reproduced"  # no size given: the side decides
    assert v(-0.3, 0.4, effect=None) == "underpowered"
    assert v(-0.9, -0.2, effect=None) == "contradicted"


def test_verdict_on_a_claim_of_no_change_and_bad_input():
    assert claims.verdict(-0.02, 0.03, bound=0.05) == "reproduced"  # inside (−b, b): equivalent
    assert claims.verdict(0.06, 0.2, bound=0.05) == "contradicted"  # wholly outside
    assert claims.verdict(-0.2, -0.05, bound=0.05) == "contradicted"
    assert claims.verdict(-0.02, 0.08, bound=0.05) == "underpowered"
    assert claims.verdict(float("nan"), 0.1, paper_effect=0.2) == "untestable"
    with pytest.raises(ValueError, match="not on the side"):
        claims.verdict(0.1, 0.2, paper_effect=-0.5)  # an increase claimed, a decrease given
    with pytest.raises(ValueError, match="direction"):
        claims.verdict(0.1, 0.2, direction=0)
    with pytest.raises(ValueError, match="bound"):
        claims.verdict(0.1, 0.2, bound=0.0)
    with pytest.raises(ValueError, match="wrong way round"):
        claims.verdict(0.3, 0.2)
    assert set(claims.MAGNITUDE_VERDICTS) >= {"reproduced", "reproduced_smaller", "ruled_out", "contradicted",
                                              "underpowered", "untestable"}


@pytest.mark.parametrize("n", [5, 10])
def test_mean_ci_keeps_its_coverage_at_small_n(n):
    """2,000 normal samples of n units: the 95 % interval covers the true mean in at least 93 % of them (the t
    interval's exact coverage is 95 %; the percentile bootstrap's at n = 5 is about 88 %)."""
    rng = np.random.default_rng(n)
    samples = rng.normal(3.0, 2.0, size=(2000, n))
    covered = [lo <= 3.0 <= hi for lo, hi in (stats.mean_ci(s, level=0.95) for s in samples)]
    assert np.mean(covered) >= 0.93
    lo, hi = stats.mean_ci(samples[0], level=0.9)
    assert lo < samples[0].mean() < hi and np.allclose((lo + hi) / 2, samples[0].mean())


def test_mean_ci_edge_cases_and_the_paired_form():
    assert all(np.isnan(x) for x in stats.mean_ci([1.0]))
    assert stats.mean_ci([2.0, 2.0, float("nan"), 2.0]) == (2.0, 2.0)  # NaN dropped; constant: zero width
    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 1.0, 2.5, 3.0])
    assert stats.paired_mean_ci(a, b) == stats.mean_ci(a - b)
    with pytest.raises(ValueError, match="same units"):
        stats.paired_mean_ci(a, b[:3])
    with pytest.raises(ValueError, match="level"):
        stats.mean_ci(a, level=95)


def test_holm_is_statsmodels_multipletests_with_nan_left_out():
    from statsmodels.stats.multitest import multipletests

    p = np.array([0.01, 0.04, float("nan"), 0.03, 0.2, 0.001])
    got = stats.adjust_p(p, "holm")
    ok = np.isfinite(p)
    np.testing.assert_allclose(got[ok], multipletests(p[ok], method="holm")[1])
    assert np.isnan(got[2])
    # by hand for three tests: sorted p times (m, m - 1, ...), made monotone
    np.testing.assert_allclose(stats.adjust_p([0.01, 0.04, 0.03], "holm"), [0.03, 0.06, 0.06])


def test_the_mde_is_detected_with_its_power_and_sets_the_units_an_effect_needs():
    """At the minimum detectable effect a two-sided t test on n units rejects in ≈ 80 % of simulated samples; an
    effect of that size needs exactly those units."""
    from scipy import stats as sps

    n, sd = 10, 2.0
    effect = stats.mde(sd, n)
    rng = np.random.default_rng(0)
    samples = rng.normal(effect, sd, size=(4000, n))
    rejected = sps.ttest_1samp(samples, 0.0, axis=1).pvalue < 0.05
    assert abs(rejected.mean() - 0.8) < 0.025
    assert stats.units_for_effect(sd, effect) == n and stats.units_for_effect(sd, effect * 1.01) == n
    assert stats.units_for_effect(sd, effect / 2) > 3 * n  # half the effect: about four times the units
    assert stats.mde(sd, 40) < effect and np.isnan(stats.mde(sd, 1)) and stats.units_for_effect(sd, 0.0) is None


# ------------------------------------------------------------------------------ rebuilt claims tables
def test_evidence_interval_and_t_test_agree_and_match_mean_ci():
    rng = np.random.default_rng(3)
    x = rng.normal(0.4, 1.0, 12)
    ev = claims.Evidence.of(x, "queries")
    assert ev.interval(0.95) == pytest.approx(stats.mean_ci(x, level=0.95))
    from scipy import stats as st

    assert ev.p() == pytest.approx(st.ttest_1samp(x, 0.0).pvalue)
    for level in (0.9, 0.95, 0.99):  # the interval excludes 0 exactly when p < 1 - level
        low, high = ev.interval(level)
        assert (low > 0 or high < 0) == (ev.p() < 1 - level)
    a, b = rng.normal(size=8), rng.normal(size=8)
    assert claims.Evidence.paired(a, b).value == pytest.approx(float(np.mean(a - b)))


def _ev(mean, sd=1.0, n=30):
    x = np.linspace(-1, 1, n)
    x = (x - x.mean()) / x.std(ddof=1) * sd + mean  # exactly this mean and sd
    return claims.Evidence.of(x)


def test_finalize_holm_levels_gating_checks_and_columns(tmp_path):
    free = ()  # rows that need no competence check (the default, None, needs every check of the table)
    pending = [claims.effect("big", "§1", "+", _ev(1.0), direction=1, paper_effect=0.5, requires=free),
               claims.effect("small", "§1", "+", _ev(0.5), direction=1, paper_effect=2.0, requires=free),
               claims.effect("none", "§1", "+", _ev(0.0), direction=1, paper_effect=0.6, requires=free),
               claims.effect("gated", "§1", "-", _ev(-1.0), direction=-1, requires=("beats BM25",)),
               claims.no_change("flat", "§2", "≈", _ev(0.0, sd=0.1), bound=0.2, requires=free),
               claims.effect("moves", "§3", "acts", _ev(-0.8), direction=-1, kind="check")]
    comp = pd.DataFrame([{"check": "beats BM25", "measure": "MRR", "ours": 0.1, "ci_low": -0.1, "ci_high": 0.3,
                          "floor": 0.0, "passed": False}])
    rows = {r.claim: r for r in claims.finalize(pending, level=0.95, competence_table=comp)}
    assert rows["big"].verdict == "reproduced"
    assert rows["small"].verdict == "reproduced_smaller"  # p ≈ 0.01: significant alone, and still after Holm
    assert rows["none"].verdict == "ruled_out"
    assert rows["gated"].verdict == "untestable" and "beats BM25" in rows["gated"].rule
    assert rows["flat"].verdict == "reproduced"
    assert rows["moves"].verdict == "reproduced" and rows["moves"].kind == "check"
    assert np.isnan(rows["moves"].p_adjusted)  # checks are not in the family
    family = [r for r in rows.values() if r.kind == "claim" and r.verdict != "untestable"]
    from statsmodels.stats.multitest import multipletests

    want = multipletests([r.p_value for r in family], method="holm")[1]
    np.testing.assert_allclose([r.p_adjusted for r in family], want)
    # the smallest p is tested at alpha / m: its interval is wider than the nominal one
    assert rows["big"].ci_high - rows["big"].ci_low > np.diff(_ev(1.0).interval(0.95))[0]
    assert rows["big"].mde == pytest.approx(stats.mde(1.0, 30), rel=1e-6)
    assert rows["none"].n_needed == stats.units_for_effect(1.0, 0.6)
    df = claims.write(tmp_path / "claims.csv", list(rows.values()))
    assert list(df.columns) == claims.COLUMNS and list(claims.read(tmp_path / "claims.csv").columns) == claims.COLUMNS
    assert claims.summary(df) == {"reproduced": 2, "reproduced_smaller": 1, "ruled_out": 1, "untestable": 1}


def test_holm_stop_widens_the_interval_to_the_null():
    # two claims: p of the first ≈ 0.03 (> 0.025, Holm stops), the second ≈ 0.04 — neither excludes 0 after Holm,
    # though each alone would
    a, b = _ev(0.41, n=30), _ev(0.39, n=30)
    assert a.p() < 0.05 and b.p() < 0.05
    rows = claims.finalize([claims.effect("a", "§", "+", a, direction=1), claims.effect("b", "§", "+", b, direction=1)],
                           level=0.95)
    assert all(r.p_adjusted >= 0.05 and r.ci_low <= 0 <= r.ci_high and r.verdict == "underpowered" for r in rows)


def test_a_no_change_claim_after_holm_stops_is_not_reproduced_but_a_large_change_still_contradicts():
    # an effect claim with p ≈ 0.03 stops Holm (α/3 first); then the no-change rows are tested on their own
    # intervals: one inside ±1 is not called reproduced (equivalence not shown for the family), one wholly beyond
    # the bound — a change larger than it — still contradicts, the interval not widened towards 0
    stop = claims.effect("stop", "§", "+", _ev(0.41, n=30), direction=1)
    inside = claims.no_change("inside", "§", "±1", claims.Evidence(0.0, 0.5, 200), bound=1.0)
    beyond = claims.no_change("beyond", "§", "±1", claims.Evidence(-6.0, 3.0, 200), bound=1.0)
    rows = {r.claim: r for r in claims.finalize([stop, inside, beyond], level=0.95)}
    assert rows["inside"].p_value < 0.001 and rows["inside"].verdict == "reproduced"  # smallest p: Holm rejects it
    assert rows["beyond"].p_adjusted >= 0.05 and rows["beyond"].ci_high < -1 and rows["beyond"].verdict == "contradicted"
    # five rows: Holm stops at the first (p ≈ 0.011 ≥ 0.05 / 5); the last, a no-change row with TOST p ≈ 0.02, is
    # inside ±1 at its own level 1 − 0.05 / 1 — equivalence is still not shown for the family
    near = claims.no_change("near", "§", "±1", claims.Evidence(0.0, 1.32, 10), bound=1.0)
    effects = [claims.effect(f"e{k}", "§", "+", claims.Evidence(v, 1.0, 30), direction=1)
               for k, v in enumerate((0.49, 0.48, 0.47, 0.46))]
    rows = {r.claim: r for r in claims.finalize([*effects, near], level=0.95)}
    assert 0.011 < rows["e0"].p_value < rows["near"].p_value < 0.025 and rows["e0"].p_adjusted >= 0.05
    assert rows["near"].ci_low > -1 and rows["near"].ci_high < 1 and rows["near"].verdict == "underpowered"


def test_a_paper_effect_on_the_wrong_side_is_refused():
    with pytest.raises(ValueError, match="not on the side"):
        claims.effect("x", "§", "-", _ev(1.0), direction=-1, paper_effect=0.5)


def test_competence_rows():
    from biaslab import competence

    up = competence.beats("beats", "MRR", _ev(0.5), level=0.95)
    flat = competence.beats("flat", "MRR", _ev(0.1), level=0.95)
    assert up["passed"] and not flat["passed"] and flat["ci_low"] < 0
    assert competence.at_least("big enough", "ARaB", 0.2, floor=0.1)["passed"]
    assert not competence.at_least("too small", "ARaB", 0.05, floor=0.1)["passed"]
    assert not competence.at_least("undefined", "ARaB", float("nan"), floor=0.1)["passed"]
    with pytest.raises(ValueError, match="named twice"):
        competence.table([up, up])


def test_every_committed_claims_table_reads_and_writes_back_to_its_bytes(tmp_path):
    """Each paper's claims.csv is a finalize table: it reads back (every column, known verdicts) and rewrites to
    the same bytes."""
    from conftest import REPO

    paths = sorted((REPO / "reports").glob("*/results/claims.csv"))
    assert len(paths) == 5
    for path in paths:
        df = claims.read(path)
        out = tmp_path / path.parent.parent.name / "claims.csv"
        claims.write(out, [claims.Claim(**r) for r in df.to_dict("records")])
        assert out.read_bytes() == path.read_bytes(), path


def test_units_for_an_effect_far_above_the_spread_is_two_not_an_error():
    assert stats.units_for_effect(0.01, 5.0) == 2  # the power solver has no answer below two units
    assert stats.units_for_effect(1.0, 1e-6) > 10**6
