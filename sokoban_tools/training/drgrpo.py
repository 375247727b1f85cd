"""Dr. GRPO (Liu et al. 2025, "Understanding R1-Zero-Like Training") as verl-agent offers it: GRPO
with ``algorithm.norm_adv_by_std_in_grpo=False``, the group mean subtracted and no division by
the standard deviation. Everything else is :mod:`.grpo`'s, the loss's mean over rows included:
the paper's length-unbiased aggregation concerns the tokens of one answer, and a step row here
holds one action.
"""

from __future__ import annotations

import numpy as np

from . import group_learner
from .recipe import CORE_ALGOS, GRPO_LAUNCHER, Choice
from .step_rows import StepRows, outcome_advantages

NAME = "drgrpo"
LABEL = "Dr. GRPO"
NORM_ADV_BY_STD = False

SUMMARY = "GRPO without the division by the group's standard deviation (norm_adv_by_std_in_grpo=False)"
RECIPE = (Choice("advantage_estimator", "grpo", f"{GRPO_LAUNCHER}: algorithm.adv_estimator=grpo"),
          Choice("norm_adv_by_std_in_grpo", NORM_ADV_BY_STD,
                 f"{CORE_ALGOS}: compute_grpo_outcome_advantage, norm_adv_by_std_in_grpo=False (Dr. GRPO)"),
          Choice("group_statistics", "over step rows",
                 f"{CORE_ALGOS}: compute_grpo_outcome_advantage(compute_mean_std_cross_steps=True), the default"),
          *group_learner.RECIPE)
CONTROLLED = group_learner.CONTROLLED
TUNED = group_learner.TUNED


def advantages(rows: StepRows) -> np.ndarray:
    return outcome_advantages(rows, by_std=NORM_ADV_BY_STD)


def build(common: dict, seed: int, config=None):
    return group_learner.build(common, seed, advantages, config)
