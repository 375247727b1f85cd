"""The runtime environment: one stored board played exactly as verl-agent's ``SokobanEnv`` plays it.

:class:`FairSokobanEnv` is the environment the workers of the drop-in runtime
(:mod:`sokoban_tools.integrations.verl_agent.envs`) run, one instance per environment, many to a
Ray actor; they play it with :meth:`FairSokobanEnv.start` and :meth:`FairSokobanEnv.play`
and send back positions, which the driver draws with :func:`render`. It restores
the complete stored board on every reset (it never regenerates a room from a
seed) and otherwise behaves step for step like verl-agent's Sokoban
environment, as recorded in the runtime traces of the original code
(``tests/test_runtime_traces.py`` replays every one):

=================================  =======  ========================================
action                             reward   what happens
=================================  =======  ========================================
0, the trainer's "no valid answer"  -0.1    nothing moves, no step is counted, done
                                            is false, info ``won`` is false
1 up, 2 down, 3 left, 4 right       -0.1    a push if the box is ahead and the cell
                                            beyond is open, else a walk if it can;
                                            counted even into a wall
the box reaches its target          +1
the box leaves its target           -1
the box is on its target            +10     after the step (so the winning push is
                                            ``-0.1 + 1 + 10``, a move after it 9.9)
=================================  =======  ========================================

``done`` is true when the box is on its target or when the counted steps equal
``max_steps`` (an equality, as in gym-sokoban: stepping on past the horizon
counts 16, 17, ... with ``done`` false again). Stepping after ``done`` is
allowed, because verl-agent keeps stepping every environment until all are
done and masks the finished ones itself.

Observations are :meth:`FairSokobanEnv.render` of the constructor's ``mode``:
``rgb_array`` (the 96x96x3 uint8 game image of :mod:`sokoban_render`),
``tiny_rgb_array`` (a text grid, despite the name), ``list`` or ``state``. The
stored shortest solution, its length and the generation seed never reach the
environment: :meth:`FairSokobanEnv.reset` keeps only the row's board.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TypedDict

import numpy as np

from sokoban_render import render_position

from ..checks import integer
from ..protocol import DEFAULT_MAX_STEPS, STEP_PENALTY
from ..records.episodes import EpisodeTally
from ..records.rows import BoardRow
from ..rules.board import ACTIONS, ACTION_NAMES, TARGET, Board
from ..rules.reward import episode_over, step_reward

NO_ACTION = 0  # verl-agent's INVALID_ACTION: what its projection sends for an unparseable answer
ALL_ACTIONS = (NO_ACTION, *ACTIONS)
MODES = ("rgb_array", "tiny_rgb_array", "list", "state")
PLAYER_ON_TARGET = 6  # in the ``state`` render only; ``room_state`` itself keeps 5
# Cell symbols of the ``list`` and ``tiny_rgb_array`` renders, by ``state`` code.
SYMBOLS = ("#", "_", "O", "√", "X", "P", "S")
TINY_CELLS = tuple(f" {symbol} \t" for symbol in SYMBOLS)  # a cell of the ``tiny_rgb_array`` render


class StepInfo(TypedDict):
    """The ``info`` dict of a step, with exactly verl-agent's keys.

    ``action_is_effective``: ``bool``, the player moved (a walk or a push).
    ``won``: ``bool``, the box is on its target (always false for action 0).
    """

    action_is_effective: bool
    won: bool


class ResetInfo(TypedDict):
    """The ``info`` dict of a reset: ``won`` (``bool``) is always false, since
    stored boards are nonterminal."""

    won: bool


def checked_mode(mode, name: str = "mode") -> str:
    """``mode`` if it is one of :data:`MODES`; else a ``ValueError`` naming ``name`` (the one check of a
    render mode, wherever it arrives: the environment, the builder, verl-agent's ``env.sokoban.mode``)."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"{name} must be one of {', '.join(MODES)}; got {mode!r}")
    return mode


def is_action(action) -> bool:
    """An integer (Python or numpy, not bool) in 0-4."""
    integer = isinstance(action, (int, np.integer)) and not isinstance(action, bool)
    return integer and int(action) in ALL_ACTIONS


ACTION_CHOICES = "0 no action, " + ", ".join(f"{a} {ACTION_NAMES[a]}" for a in ACTIONS)


def _codes(board: Board) -> list[list[int]]:
    """``room_state`` codes with a player on a target shown as 6 (:data:`PLAYER_ON_TARGET`)."""
    rows = [list(row) for row in board.room_state()]
    row, column = board.player
    if board.room_fixed[row][column] == TARGET:
        rows[row][column] = PLAYER_ON_TARGET
    return rows


def state_grid(board: Board) -> np.ndarray:
    """The ``state`` render: ``room_state`` codes with a player on a target shown as 6,
    an (H, W) uint8 array."""
    return np.array(_codes(board), dtype=np.uint8)


def render(board: Board, mode: str):
    """``board`` drawn in one of :data:`MODES`, as verl-agent's ``SokobanEnv.render`` draws it.

    ``rgb_array``: (H*16, W*16, 3) uint8 image. ``state``: (H, W) uint8 array.
    ``list``: H strings, cell symbols joined by single spaces. ``tiny_rgb_array``:
    one string, each cell as ``" " + symbol + " \\t"``, rows joined by ``"\\n"``.
    Symbols: ``#`` wall, ``_`` floor, ``O`` target, ``√`` box on target, ``X`` box,
    ``P`` player, ``S`` player on target. Arrays and lists are new on every call.
    """
    drawn = _drawn(board, checked_mode(mode, "render mode"))
    if mode == "list":
        return list(drawn)
    return drawn.copy() if isinstance(drawn, np.ndarray) else drawn


@lru_cache(maxsize=1024)
def _drawn(board: Board, mode: str):
    """:func:`render`'s drawing, kept read-only: positions repeat (a step that moves nothing,
    the copies of a group playing one board), and a driver draws every environment each
    step. At most 1,024 positions, about 28 MB of images."""
    if mode == "rgb_array":
        drawn = render_position(board.room_fixed, board.player, board.box)
    elif mode == "state":
        drawn = state_grid(board)
    elif mode == "list":
        return tuple(" ".join(SYMBOLS[code] for code in row) for row in _codes(board))
    else:
        return "\n".join("".join(TINY_CELLS[code] for code in row) for row in _codes(board))
    drawn.flags.writeable = False
    return drawn


class FairSokobanEnv:
    """One Sokoban environment playing stored boards; see the module docstring.

    ``reset(task)`` starts an episode from a stored row (or a bare :class:`Board`)
    and returns ``(observation, {"won": False})``; ``step(action)`` takes 0-4 and
    returns ``(observation, reward, done, info)``; ``render(mode)`` draws the
    current position. The environment has no randomness of its own: which board
    to play is the driver's choice (:mod:`sokoban_tools.runtime.sampler`).

    ``tally`` is the current episode's outcome so far, up to its first ``done``: its moves,
    return and outcome (:class:`sokoban_tools.records.episodes.EpisodeTally`), whose
    ``record(...)`` is the episode's log row, the same for every writer.
    """

    def __init__(self, mode: str = "rgb_array", max_steps: int = DEFAULT_MAX_STEPS):
        self.mode = checked_mode(mode)
        self.max_steps = integer("max_steps", max_steps, 1)
        self._board: Board | None = None
        self._steps = 0
        self.tally = EpisodeTally()

    @property
    def board(self) -> Board:
        """The current position (for trainers and tests; not an observation)."""
        if self._board is None:
            raise RuntimeError("no episode yet: call reset(row) first")
        return self._board

    @property
    def num_env_steps(self) -> int:
        """Actions 1-4 taken in this episode (action 0 is not counted)."""
        return self._steps

    def reset(self, task: BoardRow | Board) -> tuple[object, ResetInfo]:
        """Restore a stored initial board; only its board is read, never its
        solution or seed."""
        info = self.start(task)
        return self.render(), info

    def step(self, action: int) -> tuple[object, float, bool, StepInfo]:
        """Play one action: 0 none (see the module docstring), 1 up, 2 down, 3 left, 4 right."""
        reward, done, info = self.play(action)
        return self.render(), reward, done, info

    def start(self, task: BoardRow | Board) -> ResetInfo:
        """:meth:`reset` without the observation, for workers that send the position
        (:attr:`board`) instead of its image."""
        board = task.board if isinstance(task, BoardRow) else task
        if not isinstance(board, Board):
            raise TypeError(f"reset takes a BoardRow or a Board, not {type(task).__name__}")
        problem = board.invariant_error()
        if problem is not None:
            raise ValueError(f"the board cannot be played: {problem}")
        if board.is_solved:
            raise ValueError("the board is already solved; stored boards never are")
        self._board, self._steps, self.tally = board, 0, EpisodeTally()
        return ResetInfo(won=False)

    def play(self, action: int) -> tuple[float, bool, StepInfo]:
        """:meth:`step` without the observation: ``(reward, done, info)``."""
        if not is_action(action):
            raise ValueError(f"action must be an integer, one of {ACTION_CHOICES}; got {action!r}")
        before = self.board
        if action == NO_ACTION:
            reward, done, info = STEP_PENALTY, False, StepInfo(action_is_effective=False, won=False)
        else:
            after, outcome = before.move(int(action))
            self._board = after
            self._steps += 1
            done = episode_over(after, self._steps, self.max_steps)
            reward, info = step_reward(before, after), StepInfo(action_is_effective=outcome != "none",
                                                                won=after.is_solved)
        self.tally.add(action, reward, done, info["won"])
        return reward, done, info

    def render(self, mode: str | None = None):
        """The current position in ``mode`` (default: the constructor's), see :func:`render`."""
        return render(self.board, self.mode if mode is None else mode)
