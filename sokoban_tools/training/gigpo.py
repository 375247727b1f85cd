"""GiGPO's step-level advantage (Feng et al. 2025, "Group-in-Group Policy Optimization").

Within a group (the ``env.rollout.n`` episodes of one board), every step whose state
appears again, in the same episode or another, is an anchor state: the discounted returns
from its occurrences are compared among themselves, so a move is judged against the other
moves made from the same position. Each step's return ``G_t = r_t + gamma * G_{t+1}`` is
normalised among the steps of its (group, state) by mean and standard deviation; a state
seen once has no peers and gets 0. The step advantage is added to GRPO's episode advantage
with the weight ``step_weight`` (:func:`.grpo.group_advantages`).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np



def discounted_returns(rewards: list[float], gamma: float) -> np.ndarray:
    """``G_t`` of every step of one episode."""
    returns, running = np.zeros(len(rewards)), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def step_advantages(episodes: list, gamma: float, epsilon: float) -> list[np.ndarray]:
    """Each episode's per-step advantage among the identical states of its group (episodes
    as :class:`.grpo.Episode`: ``group``, ``states``, ``rewards``)."""
    returns = [discounted_returns(e.rewards, gamma) for e in episodes]
    anchors: dict[tuple[int, bytes], list[float]] = defaultdict(list)
    for episode, values in zip(episodes, returns):
        for state, value in zip(episode.states, values):
            anchors[(episode.group, state)].append(float(value))
    stats = {key: (np.mean(values), np.std(values, ddof=1) if len(values) > 1 else 1.0)
             for key, values in anchors.items()}
    out = []
    for episode, values in zip(episodes, returns):
        advantage = np.zeros(len(values))
        for t, (state, value) in enumerate(zip(episode.states, values)):
            mean, std = stats[(episode.group, state)]
            advantage[t] = (value - mean) / (std + epsilon)
        out.append(advantage)
    return out
