"""Intervals and tests against published values and independent computations."""

import itertools

import numpy as np
import pytest

from unavailable import unavailable

from sokoban_tools.evaluation.stats import (PairedTable, newcombe_paired_interval, sign_test_p, wilson_interval)


@pytest.mark.parametrize("wins, trials, expected", [
    # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I, method 3
    (81, 263, (0.2553, 0.3662)),
    (15, 148, (0.0624, 0.1605)),
    (0, 20, (0.0, 0.1611)),
    (1, 29, (0.0061, 0.1718)),
])
def test_wilson_interval__matches_newcombes_published_values(wins, trials, expected):
    assert tuple(round(v, 4) for v in wilson_interval(wins, trials)) == expected


def test_wilson_interval__ends_exactly_at_zero_and_one():
    assert wilson_interval(0, 256)[0] == 0.0
    assert wilson_interval(256, 256)[1] == 1.0


def test_newcombe_paired_interval__matches_altman_et_al_table_6_2():
    # Statistics with Confidence (2000), Table 6.2: 14 both, 5 only first, 0 only second, 22 neither
    low, high = newcombe_paired_interval(PairedTable(14, 5, 0, 22))
    assert (round(low, 3), round(high, 3)) == (0.011, 0.226)


@pytest.mark.parametrize("a_only, b_only, expected", [
    (5, 0, 0.0625),  # 2 / 2**5
    (1, 0, 1.0),
    (7, 7, 1.0),
    (9, 3, 299 / 2048),  # 2 * (1 + 12 + 66 + 220) / 2**12
])
def test_mcnemar_p_value__is_the_exact_binomial_test_on_the_discordant_boards(a_only, b_only, expected):
    assert sign_test_p(a_only, b_only) == expected
    assert sign_test_p(b_only, a_only) == expected


@pytest.mark.parametrize("a_only, b_only", [(20, 8), (40, 21), (3, 9), (131, 2), (120, 136)])
def test_mcnemar_p_value__agrees_with_scipys_binomial_test(a_only, b_only):
    try:
        from scipy.stats import binomtest
    except ImportError:
        unavailable("scipy is the independent reference here; pip install -e '.[test]'")
    assert sign_test_p(a_only, b_only) == pytest.approx(binomtest(a_only, a_only + b_only, 0.5).pvalue, rel=1e-12)


def test_mcnemar_p_value__is_one_without_discordant_boards():
    assert sign_test_p(0, 0) == 1.0


def test_paired_table__counts_and_difference():
    a = np.array([1, 1, 0, 0, 1, 0], dtype=bool)
    b = np.array([1, 0, 1, 0, 0, 0], dtype=bool)
    table = PairedTable.of(a, b)
    assert table == PairedTable(both=1, a_only=2, b_only=1, neither=2)
    assert table.difference == pytest.approx(a.mean() - b.mean())
