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
- several runs per method, the runs the unit of replication: a seeded
  hierarchical bootstrap (runs, then the boards of each drawn run within each
  stratum) for each success rate and their difference; an exact permutation
  test over runs, unpaired or paired by seed; rliable's interquartile mean and
  probability of improvement with its stratified bootstrap; and the seeds a
  side that 80% power would take.
"""

from __future__ import annotations

import functools
import itertools
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




def percentile_interval(values: np.ndarray) -> tuple[float, float]:
    """The central 95% of bootstrap ``values``."""
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


# Runs as the unit of replication. A run's seed draws its initial weights and every sample of its
# training, so two runs of one method differ by more than board-to-board chance: the tests below
# count seeds, not boards, and hold whatever the boards' own randomness.


def stratified_draws(rng: np.random.Generator, strata: np.ndarray, shape: tuple[int, ...]
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each stratum's board indices and its draw with replacement (so each stratum keeps its size),
    ``shape + (boards of the stratum,)`` positions among them."""
    return [(members, rng.integers(0, len(members), size=(*shape, len(members))))
            for members in (np.flatnonzero(strata == s) for s in np.unique(strata))]


def hierarchical_bootstrap(a: np.ndarray, b: np.ndarray, strata: np.ndarray, resamples: int, seed: int,
                           paired: bool) -> dict[str, np.ndarray]:
    """The bootstrap distributions of ``success_a``, ``success_b`` and their ``difference`` for the
    outcome matrices ``a`` (runs of A x boards) and ``b`` (runs of B x boards): each resample draws
    the runs of each side with replacement (the same seed indices on both sides when ``paired``),
    then, for each drawn run, the boards with replacement within each stratum. The k-th drawn run
    of A and of B share their board draw, keeping the boards paired."""
    rng = np.random.Generator(np.random.PCG64(seed))
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if paired and len(a) != len(b):
        raise ValueError(f"paired runs need as many runs a side, got {len(a)} and {len(b)}")
    seeds_a = rng.integers(0, len(a), size=(resamples, len(a)))
    seeds_b = seeds_a if paired else rng.integers(0, len(b), size=(resamples, len(b)))
    draws = stratified_draws(rng, strata, (resamples, max(len(a), len(b))))

    def success(outcomes: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        runs = seeds.shape[1]  # a resample's wins, stratum by stratum: a whole number, so its mean is exact
        wins = sum(np.count_nonzero(outcomes[:, members].ravel()[seeds[:, :, None] * len(members) + drawn[:, :runs]],
                                    axis=(1, 2)) for members, drawn in draws)
        return wins / (runs * len(strata))

    success_a, success_b = success(a, seeds_a), success(b, seeds_b)
    return {"success_a": success_a, "success_b": success_b, "difference": success_a - success_b}


EXACT_LIMIT = 200_000  # relabellings an exact permutation test enumerates; beyond, a seeded random sample
RANDOM_RELABELLINGS = 100_000


@dataclass(frozen=True)
class PermutationTest:
    """A two-sided permutation test of the difference in mean success over runs."""

    p_value: float
    relabellings: int  # how many were counted
    exact: bool  # every relabelling enumerated, or a seeded random sample of them
    paired: bool


def permutation_test(a_wins: np.ndarray, b_wins: np.ndarray, paired: bool, seed: int = 0) -> PermutationTest:
    """The permutation test over runs of mean(``a_wins``) - mean(``b_wins``), the wins of each run
    on the same boards. Unpaired, the runs' method labels are exchangeable under the null, and
    every split of the pooled runs into the two sizes is counted; paired (runs of one seed share
    initial weights), each seed's two runs swap labels, every sign pattern of the differences
    counted. The p-value is the share of relabellings whose difference is at least as far from
    0 as the observed one; integers throughout, so ties are exact. Beyond :data:`EXACT_LIMIT`
    relabellings, a seeded random sample of them, with the observed labelling counted in."""
    a_wins, b_wins = np.asarray(a_wins, dtype=np.int64), np.asarray(b_wins, dtype=np.int64)
    if paired:
        if len(a_wins) != len(b_wins):
            raise ValueError(f"paired runs need as many runs a side, got {len(a_wins)} and {len(b_wins)}")
        differences = a_wins - b_wins
        observed = abs(int(differences.sum()))
        if 2 ** len(differences) <= EXACT_LIMIT:
            signs = 1 - 2 * ((np.arange(2 ** len(differences))[:, None] >> np.arange(len(differences))) & 1)
            return PermutationTest(_share(np.abs(signs @ differences) >= observed), len(signs), True, True)
        signs = 1 - 2 * np.random.Generator(np.random.PCG64(seed)).integers(
            0, 2, size=(RANDOM_RELABELLINGS, len(differences)))
        return PermutationTest(_sampled(np.abs(signs @ differences) >= observed), RANDOM_RELABELLINGS + 1, False, True)
    pooled, n_a, n_b = np.concatenate([a_wins, b_wins]), len(a_wins), len(b_wins)
    total = int(pooled.sum())

    def scaled(sum_a: np.ndarray) -> np.ndarray:  # n_a * n_b * (mean of A - mean of B), in integers
        return np.abs(n_b * sum_a - n_a * (total - sum_a))

    observed = int(scaled(np.array(int(a_wins.sum()))))
    if math.comb(n_a + n_b, n_a) <= EXACT_LIMIT:
        splits = every_split(n_a + n_b, n_a)
        return PermutationTest(_share(scaled(pooled[splits].sum(axis=1)) >= observed), len(splits), True, False)
    rng = np.random.Generator(np.random.PCG64(seed))
    splits = np.argsort(rng.random((RANDOM_RELABELLINGS, n_a + n_b)), axis=1)[:, :n_a]
    return PermutationTest(_sampled(scaled(pooled[splits].sum(axis=1)) >= observed), RANDOM_RELABELLINGS + 1,
                           False, False)


@functools.lru_cache(maxsize=8)
def every_split(runs: int, size: int) -> np.ndarray:
    """Every choice of ``size`` of ``runs`` indices, one a row (read-only): a report tests many pairs
    of the same run counts, and listing the choices costs more than testing them."""
    splits = np.array(list(itertools.combinations(range(runs), size)), dtype=np.int64).reshape(-1, size)
    splits.flags.writeable = False
    return splits


def _share(extreme: np.ndarray) -> float:
    return float(np.count_nonzero(extreme) / len(extreme))


def _sampled(extreme: np.ndarray) -> float:
    """A sampled permutation p-value, the observed labelling counted as one of the sample."""
    return float((np.count_nonzero(extreme) + 1) / (len(extreme) + 1))


def smallest_p(runs_a: int, runs_b: int, paired: bool) -> float:
    """The smallest two-sided p-value the exact permutation test can give with these runs."""
    return 2 / 2 ** runs_a if paired else 2 / math.comb(runs_a + runs_b, runs_a)


# rliable (Agarwal et al., 2021): scores are runs x tasks; here a run's success on the board set (or
# on one stratum of it), one task. Its interquartile mean and probability of improvement, with its
# stratified bootstrap: runs resampled with replacement within each task, apart.


def interquartile_mean(scores: np.ndarray, axis: int | tuple[int, ...] | None = None) -> np.ndarray:
    """The mean of the middle half of ``scores`` (over ``axis``, all of it by default): the lowest
    and the highest quarter left out, each ``floor(n / 4)`` values, as ``scipy.stats.trim_mean(...,
    0.25)``, which rliable's IQM is."""
    scores = np.asarray(scores, dtype=float)
    if axis is None:
        scores, axis = scores.reshape(-1), 0
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    kept = [d for d in range(scores.ndim) if d not in axes]
    flat = np.transpose(scores, [*kept, *axes]).reshape(*[scores.shape[d] for d in kept], -1)
    n = flat.shape[-1]
    cut = int(n * 0.25)
    return np.sort(flat, axis=-1)[..., cut:n - cut].mean(axis=-1)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """rliable's P(X > Y): for each task (last axis), the share of pairs of a run of X and a run of Y
    (axis -2) in which X scores higher, ties counting half (the Mann-Whitney U over its maximum);
    then the mean over tasks."""
    x, y = np.asarray(x, dtype=float)[..., :, None, :], np.asarray(y, dtype=float)[..., None, :, :]
    per_task = np.mean((x > y) + 0.5 * (x == y), axis=(-3, -2))
    return per_task.mean(axis=-1)


def stratified_bootstrap(a_scores: np.ndarray, b_scores: np.ndarray, resamples: int,
                         seed: int) -> dict[str, np.ndarray]:
    """rliable's stratified bootstrap of the IQM of each side and P(A > B): the runs of each side
    resampled with replacement within each task (column), each task apart."""
    rng = np.random.Generator(np.random.PCG64(seed))

    def resample(scores: np.ndarray) -> np.ndarray:  # resamples x runs x tasks
        runs = rng.integers(0, scores.shape[0], size=(resamples, *scores.shape))
        return np.take_along_axis(scores[None].repeat(resamples, axis=0), runs, axis=1)

    a, b = resample(np.asarray(a_scores, dtype=float)), resample(np.asarray(b_scores, dtype=float))
    return {"iqm_a": interquartile_mean(a, axis=(1, 2)), "iqm_b": interquartile_mean(b, axis=(1, 2)),
            "probability_of_improvement": probability_of_improvement(a, b)}


POWER = 0.8
ALPHA = 0.05


def seeds_for_power(a_rates: np.ndarray, b_rates: np.ndarray, paired: bool, power: float = POWER,
                    alpha: float = ALPHA) -> dict | None:
    """How many runs a side would detect a difference of the observed size with ``power`` at
    two-sided ``alpha``: the normal approximation n = (z_{1-alpha/2} + z_power)^2 * k * s^2 / d^2,
    with d the observed difference of mean success, s^2 the observed between-seed variance (of the
    paired differences, k = 1; else the two sides' sample variances pooled, k = 2), but never
    fewer than the exact permutation test needs to reach ``alpha`` at all. ``None`` without two runs
    a side or with no difference observed."""
    a_rates, b_rates = np.asarray(a_rates, dtype=float), np.asarray(b_rates, dtype=float)
    if min(len(a_rates), len(b_rates)) < 2:
        return None
    difference = float(a_rates.mean() - b_rates.mean())
    if difference == 0:
        return None
    if paired:
        variance, factor = float(np.var(a_rates - b_rates, ddof=1)), 1
    else:
        variance, factor = float((np.var(a_rates, ddof=1) + np.var(b_rates, ddof=1)) / 2), 2
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    normal = math.ceil(factor * z * z * variance / difference ** 2)
    floor = next(n for n in itertools.count(2) if smallest_p(n, n, paired) < alpha)
    return {"seeds": max(normal, floor), "normal_approximation": normal, "exact_test_minimum": floor,
            "difference": difference, "between_seed_variance": variance, "power": power, "alpha": alpha}
