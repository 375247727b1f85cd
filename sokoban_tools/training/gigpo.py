"""GiGPO (Feng et al. 2025, "Group-in-Group Policy Optimization") as verl-agent's Sokoban launcher
runs it: ``algorithm.gigpo.mode=mean_norm``, ``step_advantage_w=1.0``, ``gamma=0.95``.

A row's advantage is an episode term plus a step term. The episode term is GRPO's without
the division by the standard deviation (``episode_norm_reward``, statistics over step rows).
The step term compares the moves made from one state: within a group, the rows whose
observations are identical form an anchor group, and a row's discounted return
``G_t = r_t + gamma * G_{t+1}`` less its anchor group's mean is its step advantage
(``build_step_group``, ``step_norm_reward``; a state seen once gets 0).
"""

from __future__ import annotations

import numpy as np

from . import group_learner
from .recipe import CORE_GIGPO, GIGPO_LAUNCHER, Choice
from .step_rows import StepRows, discounted_returns, group_stats, key_index, outcome_advantages

NAME = "gigpo"
LABEL = "GiGPO"
MODE = "mean_norm"
STEP_ADVANTAGE_W = 1.0
GAMMA = 0.95

SUMMARY = ("verl-agent's GiGPO (mean_norm): GRPO's episode term without the std division, plus the step term: "
           "a step's discounted return less the mean over the group's steps from the identical state")
RECIPE = (Choice("advantage_estimator", "gigpo", f"{GIGPO_LAUNCHER}: algorithm.adv_estimator=gigpo"),
          Choice("mode", MODE, f"{GIGPO_LAUNCHER}: algorithm.gigpo.mode=mean_norm"),
          Choice("step_advantage_w", STEP_ADVANTAGE_W, f"{GIGPO_LAUNCHER}: algorithm.gigpo.step_advantage_w=1.0"),
          Choice("gamma", GAMMA, f"{GIGPO_LAUNCHER}: algorithm.gamma=0.95"),
          Choice("anchor_states", "identical observations within a group",
                 f"{CORE_GIGPO}: build_step_group(enable_similarity=False)"),
          Choice("group_statistics", "over step rows",
                 f"{CORE_GIGPO}: episode_norm_reward(compute_mean_std_cross_steps=True), the default"),
          *group_learner.RECIPE)
CONTROLLED = group_learner.CONTROLLED
TUNED = group_learner.TUNED


def step_advantages(rows: StepRows, gamma: float = GAMMA) -> np.ndarray:
    """Each row's discounted return less the mean of its anchor group's (same group, same state)."""
    returns = discounted_returns(rows, gamma)
    return returns - group_stats(returns, key_index(rows.group, rows.state)).mean


def advantages(rows: StepRows) -> np.ndarray:
    return outcome_advantages(rows, by_std=False) + STEP_ADVANTAGE_W * step_advantages(rows)


def build(common: dict, seed: int, config=None):
    return group_learner.build(common, seed, advantages, config)
