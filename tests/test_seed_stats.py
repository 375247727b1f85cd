"""The statistics that count seeds, each against an independent computation (scipy, or brute
force on small hand-made inputs) and against known edge cases."""

import itertools
import math

import numpy as np
import pytest

from unavailable import unavailable

from sokoban_tools.evaluation.stats import (EXACT_LIMIT, hierarchical_bootstrap, interquartile_mean,
                                            percentile_interval, permutation_test, probability_of_improvement,
                                            seeds_for_power, smallest_p, stratified_bootstrap)


def scipy_stats():
    try:
        import scipy.stats
    except ImportError:
        unavailable("scipy is the independent reference here; pip install -e '.[test]'")
    return scipy.stats


def test_permutation__three_against_three_cannot_go_below_a_tenth_unpaired_or_a_quarter_paired():
    a, b = np.array([200, 210, 220]), np.array([100, 110, 120])  # every run of A above every run of B
    unpaired, paired = permutation_test(a, b, paired=False), permutation_test(a, b, paired=True)
    assert (unpaired.p_value, unpaired.relabellings, unpaired.exact) == (0.1, 20, True)
    assert (paired.p_value, paired.relabellings, paired.exact) == (0.25, 8, True)
    assert smallest_p(3, 3, paired=False) == 0.1 and smallest_p(3, 3, paired=True) == 0.25
    assert permutation_test(a, a, paired=False).p_value == 1.0 == permutation_test(a, a, paired=True).p_value


@pytest.mark.parametrize("a, b", [([180, 190, 205], [170, 200, 150]), ([12, 40, 33, 25], [30, 31, 29, 28]),
                                  ([100, 101, 99, 130, 90], [95, 96, 97, 110, 80])])
def test_permutation__matches_scipys_exact_permutation_test(a, b):
    stats = scipy_stats()
    a, b = np.array(a), np.array(b)

    def difference(x, y, axis=-1):
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    for paired, kind in ((False, "independent"), (True, "samples")):
        expected = stats.permutation_test((a, b), difference, permutation_type=kind, n_resamples=np.inf,
                                          alternative="two-sided", vectorized=True).pvalue
        assert permutation_test(a, b, paired=paired).p_value == pytest.approx(expected, abs=1e-12), kind


def test_permutation__unequal_sides_match_brute_force_enumeration():
    a, b = np.array([50, 61, 58, 70]), np.array([49, 55])
    pooled = np.concatenate([a, b])
    observed = abs(a.mean() - b.mean())
    splits = list(itertools.combinations(range(6), 4))
    extreme = sum(abs(pooled[list(s)].mean() - np.delete(pooled, list(s)).mean()) >= observed - 1e-12 for s in splits)
    assert permutation_test(a, b, paired=False).p_value == pytest.approx(extreme / len(splits), abs=1e-15)


def test_permutation__beyond_the_exact_limit_samples_relabellings_seeded():
    rng = np.random.default_rng(0)
    a, b = rng.integers(100, 200, 12), rng.integers(90, 190, 12)
    assert math.comb(24, 12) > EXACT_LIMIT
    first = permutation_test(a, b, paired=False, seed=5)
    assert not first.exact and first == permutation_test(a, b, paired=False, seed=5)
    stats = scipy_stats()
    expected = stats.permutation_test((a, b), lambda x, y, axis=-1: x.mean(axis) - y.mean(axis), n_resamples=100_000,
                                      vectorized=True, random_state=1).pvalue
    assert first.p_value == pytest.approx(expected, abs=0.01)


def test_hierarchical_bootstrap__is_seeded_and_identical_methods_hold_zero():
    rng = np.random.default_rng(2)
    strata = np.array(["1-4"] * 30 + ["5-8"] * 20)
    runs = rng.random((3, 50)) < 0.6
    same = hierarchical_bootstrap(runs, runs, strata, 500, seed=1, paired=True)
    assert np.all(same["difference"] == 0)  # paired by seed, the same runs on the same boards
    unpaired = percentile_interval(hierarchical_bootstrap(runs, runs, strata, 500, seed=1, paired=False)["difference"])
    assert unpaired[0] < 0 < unpaired[1]
    first = hierarchical_bootstrap(runs, ~runs, strata, 300, seed=4, paired=False)
    again = hierarchical_bootstrap(runs, ~runs, strata, 300, seed=4, paired=False)
    assert all(np.array_equal(first[k], again[k]) for k in first)
    assert not np.array_equal(first["difference"],
                              hierarchical_bootstrap(runs, ~runs, strata, 300, seed=5, paired=False)["difference"])


def test_hierarchical_bootstrap__has_the_two_level_variance():
    """Drawing n runs, then B boards of each drawn run: the variance of the grand mean is
    (population variance of the run rates + mean of p(1 - p) / B) / n."""
    rng = np.random.default_rng(3)
    boards = 80
    runs = np.stack([rng.random(boards) < p for p in (0.3, 0.55, 0.8, 0.6)])
    strata = np.array(["all"] * boards)
    drawn = hierarchical_bootstrap(runs, runs, strata, 40_000, seed=0, paired=False)["success_a"]
    rates = runs.mean(axis=1)
    expected = (np.var(rates) + np.mean(rates * (1 - rates)) / boards) / len(runs)
    assert drawn.var() == pytest.approx(expected, rel=0.05)
    assert drawn.mean() == pytest.approx(rates.mean(), abs=0.002)


def test_hierarchical_bootstrap__of_one_run_each_is_scipys_paired_board_bootstrap():
    stats = scipy_stats()
    rng = np.random.default_rng(4)
    a, b = rng.random((1, 200)) < 0.7, rng.random((1, 200)) < 0.5
    ours = percentile_interval(hierarchical_bootstrap(a, b, np.array(["s"] * 200), 20_000, seed=0,
                                                      paired=False)["difference"])
    theirs = stats.bootstrap(((a[0].astype(float) - b[0]),), np.mean, n_resamples=20_000, method="percentile",
                             random_state=0).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.01)


def test_interquartile_mean__is_scipys_trimmed_mean_of_a_quarter():
    stats = scipy_stats()
    rng = np.random.default_rng(5)
    for shape in ((3, 1), (4, 1), (10, 1), (7, 3), (10, 5)):
        scores = rng.random(shape)
        assert interquartile_mean(scores) == pytest.approx(stats.trim_mean(scores, 0.25, axis=None), abs=1e-15)
    assert interquartile_mean([0.1, 0.9, 0.5, 0.4, 0.6, 0.45, 0.55, 0.2]) == pytest.approx(np.mean([0.4, 0.45, 0.5,
                                                                                                      0.55]))


def test_probability_of_improvement__is_the_mann_whitney_u_over_its_maximum_per_task():
    stats = scipy_stats()
    x = np.array([[0.7, 0.2], [0.8, 0.2], [0.6, 0.4]])
    y = np.array([[0.7, 0.3], [0.5, 0.2], [0.9, 0.1], [0.6, 0.2]])
    per_task = [stats.mannwhitneyu(x[:, t], y[:, t]).statistic / (len(x) * len(y)) for t in range(2)]
    assert probability_of_improvement(x, y) == pytest.approx(np.mean(per_task), abs=1e-15)
    # by hand, task 0: of 12 pairs 0.7 beats 0.5 and 0.6 and ties 0.7; 0.8 beats three; 0.6 beats 0.5, ties 0.6
    assert probability_of_improvement(x[:, :1], y[:, :1]) == pytest.approx((2.5 + 3 + 1.5) / 12)
    assert probability_of_improvement(x, x) == 0.5


def test_stratified_bootstrap__resamples_runs_within_each_task_as_scipy_does_for_one():
    stats = scipy_stats()
    rng = np.random.default_rng(6)
    a, b = rng.random((10, 1)), rng.random((10, 1))
    ours = percentile_interval(stratified_bootstrap(a, b, 20_000, seed=0)["iqm_a"])
    theirs = stats.bootstrap((a[:, 0],), lambda v, axis=-1: stats.trim_mean(v, 0.25, axis=axis), n_resamples=20_000,
                             method="percentile", random_state=0).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.01)
    identical = stratified_bootstrap(a, a, 300, seed=1)
    low, high = percentile_interval(identical["probability_of_improvement"])
    assert low < 0.5 < high


def test_seeds_for_power__normal_approximation_and_the_exact_tests_floor():
    a, b = np.array([0.70, 0.74, 0.78]), np.array([0.66, 0.70, 0.74])  # sd 0.04 a side, difference 0.04
    power = seeds_for_power(a, b, paired=False)
    z = 1.959963984540054 + 0.8416212335729143
    assert power["normal_approximation"] == math.ceil(2 * z * z * 0.0016 / 0.0016) == 16
    assert power["seeds"] == 16 and power["exact_test_minimum"] == 4  # 2 / C(8, 4) = 0.029 < 0.05 <= 2 / C(6, 3)
    assert seeds_for_power(a, b, paired=True)["exact_test_minimum"] == 6  # 2 / 2**6 < 0.05 <= 2 / 2**5
    assert seeds_for_power(a, a, paired=False) is None and seeds_for_power(a[:1], b, paired=False) is None
    huge = seeds_for_power(np.array([0.95, 0.96]), np.array([0.2, 0.21]), paired=False)
    assert huge["normal_approximation"] == 1 and huge["seeds"] == 4


def test_seeds_for_power__gives_eighty_percent_power_in_simulation():
    """At the number of seeds the line gives, a two-sample t-test on runs drawn with the observed
    spread detects the observed difference about 80% of the time, and far less at half of it."""
    stats = scipy_stats()
    a, b = np.array([0.62, 0.70, 0.78, 0.66]), np.array([0.60, 0.64, 0.72, 0.56])
    power = seeds_for_power(a, b, paired=False)
    n, sd, difference = power["seeds"], math.sqrt(power["between_seed_variance"]), power["difference"]
    assert 15 <= n <= 60  # large enough that the normal approximation should hold
    rng = np.random.default_rng(7)

    def detected(seeds: int) -> float:
        x = rng.normal(difference, sd, size=(4000, seeds))
        y = rng.normal(0.0, sd, size=(4000, seeds))
        return float(np.mean(stats.ttest_ind(x, y, axis=1).pvalue < 0.05))

    assert 0.74 <= detected(n) <= 0.85
    assert detected(n // 2) < 0.6
