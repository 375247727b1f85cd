"""Interval estimates and paired tests for success on a fixed board set.

Every method plays the same boards, so two methods are compared board by
board (paired), which is far more sensitive than comparing two means. The
intervals and tests here are standard ones, chosen so that small counts and
rates near 0 or 1 stay honest:

- one success rate: the exact (Clopper-Pearson) interval, whose coverage is
  guaranteed, on every surface (``score``, ``compare``, ``leaderboard``, the card):
  :func:`success_interval`, labelled :data:`SUCCESS_INTERVAL`, so one pass reads
  the same everywhere;
- two methods, one run each: the paired 2x2 table, Newcombe's interval for a
  paired difference (his method 10, from the two Wilson intervals and the
  table's correlation), and the exact two-sided McNemar test, a binomial test
  on the discordant boards, in integers;
- several comparisons at once (every results entry against the best): Holm's
  step-down correction of their p-values;
- several runs per method: a seeded bootstrap that resamples the runs of each
  method and, within each stratum, the boards (as in rliable's stratified
  bootstrap), giving percentile intervals for each success rate, their
  difference and the probability of improvement.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95
Z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)


def wilson_interval(wins: int, trials: int) -> tuple[float, float]:
    """Wilson's 95% score interval for a success rate of ``wins`` in ``trials``: the part
    Newcombe's paired interval is built from (a single rate takes :func:`success_interval`)."""
    if trials <= 0 or not 0 <= wins <= trials:
        raise ValueError(f"need 0 <= wins <= trials and trials > 0, got {wins} of {trials}")
    rate = wins / trials
    denominator = 1 + Z * Z / trials
    centre = (rate + Z * Z / (2 * trials)) / denominator
    half = Z * math.sqrt(rate * (1 - rate) / trials + Z * Z / (4 * trials * trials)) / denominator
    return (0.0 if wins == 0 else centre - half), (1.0 if wins == trials else centre + half)


SUCCESS_INTERVAL = "exact (Clopper-Pearson) 95% interval"


def success_interval(wins: int, trials: int) -> tuple[float, float]:
    """The 95% interval of a success rate, as every report gives it (:data:`SUCCESS_INTERVAL`)."""
    return exact_interval(wins, trials)


@functools.lru_cache(maxsize=4096)  # a report asks for the same few counts of the same board sets again and again
def exact_interval(wins: int, trials: int) -> tuple[float, float]:
    """The exact (Clopper-Pearson) 95% interval for ``wins`` in ``trials``: the success rates
    whose binomial tail beyond ``wins`` is at least 2.5% on each side (found by bisection)."""
    if trials <= 0 or not 0 <= wins <= trials:
        raise ValueError(f"need 0 <= wins <= trials and trials > 0, got {wins} of {trials}")
    tail = (1 - CONFIDENCE) / 2
    low = 0.0 if wins == 0 else _bisect(lambda p: _at_least(wins, trials, p) < tail)
    high = 1.0 if wins == trials else _bisect(lambda p: _at_least(wins + 1, trials, p) < 1 - tail)
    return low, high


@functools.lru_cache(maxsize=64)
def _log_binomials(trials: int) -> np.ndarray:
    """log C(trials, k) for k = 0..trials."""
    k = np.arange(trials + 1)
    return np.array([math.lgamma(trials + 1) - math.lgamma(i + 1) - math.lgamma(trials - i + 1) for i in k])


def _at_least(wins: int, trials: int, rate: float) -> float:
    """P(X >= wins) for X ~ Binomial(trials, rate), 0 < rate < 1, summed in logs."""
    k = np.arange(wins, trials + 1)
    terms = _log_binomials(trials)[wins:] + k * math.log(rate) + (trials - k) * math.log1p(-rate)
    return min(1.0, float(np.exp(terms).sum()))


def _bisect(below) -> float:
    """The rate in (0, 1) where the increasing condition ``below(rate)`` turns false."""
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        if below(middle):
            low = middle
        else:
            high = middle
    return (low + high) / 2


def holm_adjusted(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the family-wise error stays
    at most alpha when each adjusted value is compared with alpha."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


@dataclass(frozen=True)
class PairedTable:
    """Boards both methods solved, only A, only B, and neither."""

    both: int
    a_only: int
    b_only: int
    neither: int

    @classmethod
    def of(cls, a: np.ndarray, b: np.ndarray) -> "PairedTable":
        """The table of two boolean outcome vectors over the same boards."""
        a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
        return cls(int(np.sum(a & b)), int(np.sum(a & ~b)), int(np.sum(~a & b)), int(np.sum(~a & ~b)))

    @property
    def boards(self) -> int:
        return self.both + self.a_only + self.b_only + self.neither

    @property
    def difference(self) -> float:
        """Success of A minus success of B."""
        return (self.a_only - self.b_only) / self.boards


def newcombe_paired_interval(table: PairedTable) -> tuple[float, float]:
    """Newcombe's (1998) method-10 95% interval for the paired difference in success."""
    n = table.boards
    a_wins, b_wins = table.both + table.a_only, table.both + table.b_only
    p1, p2 = a_wins / n, b_wins / n
    l1, u1 = wilson_interval(a_wins, n)
    l2, u2 = wilson_interval(b_wins, n)
    margins = a_wins * (n - a_wins) * b_wins * (n - b_wins)
    phi = 0.0
    if margins > 0:
        cross = table.both * table.neither - table.a_only * table.b_only
        corrected = cross - n / 2 if cross > n / 2 else min(cross, 0)
        phi = corrected / math.sqrt(margins)
    difference = p1 - p2
    lower = difference - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    upper = difference + math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return max(-1.0, lower), min(1.0, upper)


def sign_test_p(a_better: int, b_better: int) -> float:
    """Exact two-sided binomial p-value of ``a_better`` against ``b_better``
    under equal chances: McNemar's exact test when they are discordant boards."""
    discordant = a_better + b_better
    # Binomial(n, 1/2) is symmetric, so the two-sided p-value is the smaller tail
    # doubled; counted in integers and divided once, it is exact to the last bit.
    tail = sum(math.comb(discordant, k) for k in range(min(a_better, b_better) + 1))
    return min(1.0, 2 * tail / 2 ** discordant)


def improvement_probability(a_rates: np.ndarray, b_rates: np.ndarray) -> np.ndarray:
    """Per board (last axis averaged), the chance that a random run of A beats a
    random run of B, ties counting half (rliable's probability of improvement
    for success/failure outcomes)."""
    ties = a_rates * b_rates + (1 - a_rates) * (1 - b_rates)
    return np.mean(a_rates * (1 - b_rates) + ties / 2, axis=-1)


@dataclass(frozen=True)
class Bootstrap:
    """Percentile 95% intervals from resampling runs and stratified boards."""

    resamples: int
    seed: int

    def intervals(self, a: np.ndarray, b: np.ndarray, strata: np.ndarray) -> dict[str, tuple[float, float]]:
        """Intervals of ``success_a``, ``success_b``, ``difference`` and
        ``probability_of_improvement`` for outcome matrices ``a`` (runs of A x
        boards) and ``b`` (runs of B x boards); ``strata`` labels each board.
        Runs of each method are resampled independently; boards are resampled
        within each stratum and shared by both methods, keeping the pairing."""
        rng = np.random.Generator(np.random.PCG64(self.seed))
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        columns = [members[rng.integers(0, len(members), size=(self.resamples, len(members)))]
                   for members in (np.flatnonzero(strata == s) for s in np.unique(strata))]
        boards = np.concatenate(columns, axis=1)
        a_rates = self._rates(rng, a, boards)
        b_rates = self._rates(rng, b, boards)
        success_a, success_b = a_rates.mean(axis=1), b_rates.mean(axis=1)
        statistics = {
            "success_a": success_a,
            "success_b": success_b,
            "difference": success_a - success_b,
            "probability_of_improvement": improvement_probability(a_rates, b_rates),
        }
        return {name: percentile_interval(values) for name, values in statistics.items()}

    def _rates(self, rng: np.random.Generator, outcomes: np.ndarray, boards: np.ndarray) -> np.ndarray:
        """Per resample and resampled board, the success rate over resampled runs."""
        runs = rng.integers(0, outcomes.shape[0], size=(self.resamples, outcomes.shape[0]))
        per_board = outcomes[runs].mean(axis=1)  # resamples x boards
        return np.take_along_axis(per_board, boards, axis=1)


def percentile_interval(values: np.ndarray) -> tuple[float, float]:
    """The central 95% of bootstrap ``values``."""
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
