"""One update's steps as arrays, and the group statistics every group-relative estimator needs.

verl-agent trains on step rows: every step of every episode is one row, carrying its board's
group (``uid``), its episode (``traj_uid``), its reward and the observation it was taken from
(``anchor_obs``). :class:`StepRows` is that batch as plain arrays, so an advantage estimator is
a pure function ``StepRows -> advantages`` over it, whichever learner collected the steps (the
per-environment learner of :mod:`.group_learner` or a batched one). Statistics are per row:
a group's mean and standard deviation are taken over its step rows, a long episode weighing
more than a short one, as verl-agent's ``compute_mean_std_cross_steps=True`` takes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPSILON = 1e-6  # verl-agent's, under every normalisation


@dataclass(frozen=True)
class StepRows:
    """``group``, ``episode``: integer ids per row (the rows of one episode contiguous and in
    order); ``reward``: the step's reward; ``state``: the observation the step was taken from,
    one row of bytes per step (compared for equality only)."""

    group: np.ndarray
    episode: np.ndarray
    reward: np.ndarray
    state: np.ndarray

    def __post_init__(self):
        count = len(self.reward)
        if not (len(self.group) == len(self.episode) == len(self.state) == count):
            raise ValueError(f"step rows: group, episode, reward and state hold {len(self.group)}, "
                             f"{len(self.episode)}, {count} and {len(self.state)} rows; give one per step")


def episode_returns(rows: StepRows) -> np.ndarray:
    """Each row's episode return (the sum of its episode's rewards): verl-agent's score of a row."""
    _, episode = np.unique(rows.episode, return_inverse=True)
    return np.bincount(episode, weights=np.asarray(rows.reward, dtype=np.float64))[episode]


def discounted_returns(rows: StepRows, gamma: float) -> np.ndarray:
    """Each row's return from that step on, ``G_t = r_t + gamma * G_{t+1}`` within its episode,
    in float32 as verl-agent's ``compute_step_discounted_returns`` computes it (its rounding
    moves a return of about 10 by up to 2e-6, more than the estimators' agreement asks)."""
    rewards = np.asarray(rows.reward, dtype=np.float32)
    factor = np.float32(gamma)
    returns = np.empty_like(rewards)
    last = len(rewards) - 1
    for t in range(last, -1, -1):
        following = t < last and rows.episode[t + 1] == rows.episode[t]
        returns[t] = rewards[t] + factor * returns[t + 1] if following else rewards[t]
    return returns.astype(np.float64)


def key_index(*columns: np.ndarray) -> np.ndarray:
    """A dense id per row for the combination of ``columns`` (1-D ids or 2-D rows of bytes)."""
    parts = [np.ascontiguousarray(c).reshape(len(c), -1).view(np.uint8).reshape(len(c), -1) for c in columns]
    joined = np.ascontiguousarray(np.concatenate(parts, axis=1))
    keys = joined.view(np.dtype((np.void, joined.shape[1]))).ravel()
    return np.unique(keys, return_inverse=True)[1].ravel()


@dataclass(frozen=True)
class GroupStats:
    """Per row: how many rows share its key, their mean and unbiased standard deviation (0 where
    the key has one row)."""

    count: np.ndarray
    mean: np.ndarray
    std: np.ndarray


def group_stats(values: np.ndarray, keys: np.ndarray) -> GroupStats:
    """The statistics of ``values`` over the rows of each key (``keys``: dense ids)."""
    values = np.asarray(values, dtype=np.float64)
    count = np.bincount(keys)
    mean = np.bincount(keys, weights=values) / count
    squares = np.bincount(keys, weights=(values - mean[keys]) ** 2)
    std = np.sqrt(np.divide(squares, count - 1, out=np.zeros_like(squares), where=count > 1))
    return GroupStats(count[keys], mean[keys], std[keys])


def outcome_advantages(rows: StepRows, by_std: bool) -> np.ndarray:
    """GRPO's outcome advantage of every row: its episode return less its group's mean, over
    the group's standard deviation when ``by_std`` (verl-agent's ``norm_adv_by_std_in_grpo``);
    a group of one row keeps its return (mean 0, standard deviation 1)."""
    scores = episode_returns(rows)
    stats = group_stats(scores, key_index(rows.group))
    single = stats.count == 1
    mean = np.where(single, 0.0, stats.mean)
    centred = scores - mean
    return centred / (np.where(single, 1.0, stats.std) + EPSILON) if by_std else centred
