"""The runtime reference: play one stored board as verl-agent's Sokoban environment does.

:class:`FairSokobanEnv` restores the complete stored board on every reset (it never
regenerates a room from a seed) and steps it with the rules of :class:`Board`,
scoring each action exactly as gym-sokoban 0.0.6's ``SokobanEnv.step`` scores
its *push* actions 1-4, which are the actions verl-agent sends it (1 up, 2 down,
3 left, 4 right). A push action pushes the box when it is directly ahead and
the cell beyond it is floor or a target, and otherwise walks if it can, which is
exactly :meth:`Board.move`:

=====================================  ==========
every action, effective or not         -0.1
the box reaches a target               +1
the box leaves a target                -1
all boxes on targets (the board won)   +10
=====================================  ==========

An episode is done when the board is won or after ``max_steps`` actions (15 by
default, the horizon of the GRPO/CPAD launchers). Rewards are summed in
gym-sokoban's order, so they are the same Python floats (a winning step is
``-0.1 + 1 + 10``). With one box the -1 never occurs: the step that puts the box
on its target ends the episode.

The agent observes an :class:`Observation` (the RGB game image and its XSB
text) and a :class:`StepInfo`. Neither the stored shortest solution, nor its
length, nor the generation seed ever reaches them: :meth:`FairSokobanEnv.reset`
keeps only the row's board.

Differences from verl-agent's wrapper, by design: actions other than 1-4 are
refused (verl-agent maps unparseable model output to action 0, which it answers
itself with reward 0 without counting a step), and stepping a finished episode
is an error rather than silently continuing past the horizon.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np


from .board import ACTIONS, ACTION_NAMES, Board
from .images import render_board
from .records import BoardRow

STEP_PENALTY = -0.1
BOX_ON_TARGET_REWARD = 1.0
BOX_OFF_TARGET_PENALTY = -1.0
WIN_REWARD = 10.0
DEFAULT_MAX_STEPS = 15


@dataclass(frozen=True, eq=False)
class Observation:
    """What the agent sees of the current position.

    ``image``: ``np.ndarray`` of shape (H*16, W*16, 3) = (96, 96, 3) for the 6x6
    boards, dtype ``uint8``, read-only; the RGB game image of verl-agent's
    ``rgb_array`` mode (gym-sokoban's tiles, 16x16 pixels per cell).

    ``text``: ``str``, the position in XSB notation, H rows of W characters
    joined by ``"\\n"``, for text-mode agents.
    """

    image: np.ndarray
    text: str


class StepInfo(TypedDict):
    """The ``info`` dict of a step, with exactly verl-agent's keys.

    ``action_is_effective``: ``bool``, the player moved (a walk or a push).
    ``won``: ``bool``, the box is on its target.
    """

    action_is_effective: bool
    won: bool


class ResetInfo(TypedDict):
    """The ``info`` dict of a reset: ``won`` (``bool``) is always false, since
    stored boards are nonterminal."""

    won: bool


def observe(board: Board) -> Observation:
    """The observation of a board position."""
    image = render_board(board)
    image.flags.writeable = False
    return Observation(image=image, text=board.xsb())


def step_reward(before: Board, after: Board) -> float:
    """gym-sokoban 0.0.6's reward for the move from ``before`` to ``after``."""
    reward = STEP_PENALTY
    if after.is_solved and not before.is_solved:
        reward += BOX_ON_TARGET_REWARD
    elif before.is_solved and not after.is_solved:
        reward += BOX_OFF_TARGET_PENALTY
    if after.is_solved:
        reward += WIN_REWARD
    return reward


class FairSokobanEnv:
    """One Sokoban environment worker playing stored boards.

    ``reset(row)`` starts an episode from a stored row (or a bare :class:`Board`);
    ``step(action)`` takes 1 up, 2 down, 3 left or 4 right and returns
    ``(observation, reward, done, info)`` like verl-agent's ``SokobanEnv.step``.
    The environment has no randomness of its own: which board to play is the
    sampler's choice (:mod:`sokoban_tools.sampler`).
    """

    def __init__(self, max_steps: int = DEFAULT_MAX_STEPS):
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.max_steps = max_steps
        self._board: Board | None = None
        self._steps = 0
        self._done = True

    @property
    def board(self) -> Board:
        """The current position (for trainers and tests; not an observation)."""
        if self._board is None:
            raise RuntimeError("no episode yet: call reset(row) first")
        return self._board

    @property
    def num_steps(self) -> int:
        """Actions taken in this episode."""
        return self._steps

    @property
    def done(self) -> bool:
        return self._done

    def reset(self, task: BoardRow | Board) -> tuple[Observation, ResetInfo]:
        """Restore a stored initial board; only its board is read, never its
        solution or seed."""
        board = task.board if isinstance(task, BoardRow) else task
        if not isinstance(board, Board):
            raise TypeError(f"reset takes a BoardRow or a Board, not {type(task).__name__}")
        problem = board.invariant_error()
        if problem is not None:
            raise ValueError(f"the board cannot be played: {problem}")
        if board.is_solved:
            raise ValueError("the board is already solved; stored boards never are")
        self._board, self._steps, self._done = board, 0, False
        return observe(board), ResetInfo(won=False)

    def step(self, action: int) -> tuple[Observation, float, bool, StepInfo]:
        """Play one action: 1 up, 2 down, 3 left, 4 right."""
        if self._board is None or self._done:
            raise RuntimeError("the episode is over (or never started): call reset(row)")
        is_integer = isinstance(action, (int, np.integer)) and not isinstance(action, bool)
        if not is_integer or action not in ACTIONS:
            names = ", ".join(f"{a} {ACTION_NAMES[a]}" for a in ACTIONS)
            raise ValueError(f"action must be one of {names}; got {action!r}")
        before = self._board
        after, outcome = before.move(int(action))
        self._board = after
        self._steps += 1
        reward = step_reward(before, after)
        self._done = after.is_solved or self._steps >= self.max_steps
        info = StepInfo(action_is_effective=outcome != "none", won=after.is_solved)
        return observe(after), reward, self._done, info
