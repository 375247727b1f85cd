"""RLOO (Ahmadian et al. 2024, "Back to Basics") as verl-agent computes it
(``algorithm.adv_estimator=rloo``, ``compute_rloo_outcome_advantage``): each step row's return
less the mean of the other rows of its group, counted over step rows as verl-agent counts
them (``n / (n - 1)`` times the return less the group mean, ``n`` the group's rows; a group of
one row keeps its return). verl-agent has no Sokoban RLOO launcher; the recipe is its GRPO
launcher's (:mod:`.group_learner`).
"""

from __future__ import annotations

import numpy as np

from . import group_learner
from .recipe import CORE_ALGOS, Choice
from .step_rows import StepRows, episode_returns, group_stats, key_index

NAME = "rloo"
LABEL = "RLOO"

SUMMARY = "verl-agent's RLOO: each step's episode return less the mean of the other step rows of its group"
RECIPE = (Choice("advantage_estimator", "rloo", f"{CORE_ALGOS}: compute_rloo_outcome_advantage "
                                                f"(algorithm.adv_estimator=rloo)"),
          Choice("group_statistics", "over step rows",
                 f"{CORE_ALGOS}: compute_rloo_outcome_advantage(compute_mean_std_cross_steps=True), the default"),
          *group_learner.RECIPE)
CONTROLLED = group_learner.CONTROLLED
TUNED = group_learner.TUNED


def advantages(rows: StepRows) -> np.ndarray:
    scores = episode_returns(rows)
    stats = group_stats(scores, key_index(rows.group))
    n = stats.count
    return np.where(n > 1, scores * n / np.maximum(n - 1, 1) - stats.mean * n / np.maximum(n - 1, 1), scores)


def build(common: dict, seed: int, config=None):
    return group_learner.build(common, seed, advantages, config)
