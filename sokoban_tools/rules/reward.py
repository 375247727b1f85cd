"""The reward and the end of an episode: gym-sokoban 0.0.6's scheme, as verl-agent plays it.

They live beside the move rule (:mod:`sokoban_tools.rules.board`) because every player of a
board needs them and none may own them: the runtime (:mod:`sokoban_tools.runtime.env`) plays
by them, and the replay that checks its logs (:mod:`sokoban_tools.evaluation.replay`) and the
exact baselines (:mod:`sokoban_tools.evaluation.baselines`) recompute from them, never through
the runtime's own code. The values are the protocol's (:mod:`sokoban_tools.protocol`).
"""

from __future__ import annotations

from ..protocol import BOX_OFF_TARGET_PENALTY, BOX_ON_TARGET_REWARD, STEP_PENALTY, WIN_REWARD
from .board import Board


def step_reward(before: Board, after: Board) -> float:
    """The reward of the move (action 1-4) from ``before`` to ``after``: the step penalty, plus
    the box reaching (or leaving) its target, plus the win bonus while the box is on it."""
    reward = STEP_PENALTY
    if after.is_solved and not before.is_solved:
        reward += BOX_ON_TARGET_REWARD
    elif before.is_solved and not after.is_solved:
        reward += BOX_OFF_TARGET_PENALTY
    if after.is_solved:
        reward += WIN_REWARD
    return reward


def episode_over(after: Board, counted_steps: int, horizon: int) -> bool:
    """Whether the move that led to ``after``, the ``counted_steps``-th action 1-4, ends the
    episode: the box is on its target, or the count reached the horizon (an equality, as in
    gym-sokoban, which counts on past it with ``done`` false again)."""
    return after.is_solved or counted_steps == horizon
