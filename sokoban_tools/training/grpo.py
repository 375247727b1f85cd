"""GRPO as verl-agent computes it (``algorithm.adv_estimator=grpo``, its Sokoban launcher).

Every step row's advantage is its episode's return less the mean of its group's rows, over
their standard deviation (``norm_adv_by_std_in_grpo``), the statistics taken over step rows
(``compute_mean_std_cross_steps=True``): verl-agent's ``compute_grpo_outcome_advantage``.
The learner and the rest of the recipe are :mod:`.group_learner`'s.
"""

from __future__ import annotations

import numpy as np

from . import group_learner
from .recipe import CORE_ALGOS, GRPO_LAUNCHER, VERL_CONFIG, Choice
from .step_rows import StepRows, outcome_advantages

NAME = "grpo"
LABEL = "GRPO"
NORM_ADV_BY_STD = True

SUMMARY = ("verl-agent's GRPO: each step's advantage is its episode's return less its group's mean over the "
           "group's standard deviation, both taken over the group's step rows")
RECIPE = (Choice("advantage_estimator", "grpo", f"{GRPO_LAUNCHER}: algorithm.adv_estimator=grpo"),
          Choice("norm_adv_by_std_in_grpo", NORM_ADV_BY_STD, f"{VERL_CONFIG}: algorithm.norm_adv_by_std_in_grpo: True"),
          Choice("group_statistics", "over step rows",
                 f"{CORE_ALGOS}: compute_grpo_outcome_advantage(compute_mean_std_cross_steps=True), the default"),
          *group_learner.RECIPE)
CONTROLLED = group_learner.CONTROLLED
TUNED = group_learner.TUNED


def advantages(rows: StepRows) -> np.ndarray:
    return outcome_advantages(rows, by_std=NORM_ADV_BY_STD)


def build(common: dict, seed: int, config=None):
    return group_learner.build(common, seed, advantages, config)
