"""Many boards stepped at once: :class:`FairSokobanEnv`'s step as array operations.

:class:`FairSokobanEnv` plays one board a call, in Python; a learner that steps hundreds
of boards together spends most of its time there. :class:`BoardBatch` holds B positions
as arrays (the player's and the box's cells, the counted steps) over a :class:`BoardTable`
of stored boards, and :meth:`BoardBatch.play` steps them all with a handful of numpy
operations, by the same rules and rewards, in the same floating-point operations, so
every reward is the same float:

* the steps are the room's :func:`sokoban_tools.rules.board.layout` (the one definition of a
  step), tabulated per room by :class:`BoardTable`; the rule applied to them is
  :meth:`Layout.moves`' (walk onto an open cell; the box there is pushed if the cell beyond is open);
* rewards and ends are :func:`sokoban_tools.rules.reward.step_reward` and
  :func:`~sokoban_tools.rules.reward.episode_over`'s: -0.1 a step, +1 the box reaching its
  target, -1 leaving it, +10 while it is on it; action 0 spends -0.1, moves nothing and is
  not counted; ``done`` when the box is on its target or the counted steps *equal* the
  horizon (stepping on is allowed, as the runtime allows it).

``tests/test_vector_env.py`` replays every recorded trace of verl-agent's environment
through a batch (all 1,200 episodes in one batch) and compares each step with the record.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from sokoban_render import TILE_SIZE, render_rgb

from ..checks import integer
from ..protocol import BOX_OFF_TARGET_PENALTY, BOX_ON_TARGET_REWARD, DEFAULT_MAX_STEPS, STEP_PENALTY, WIN_REWARD
from ..rules.board import ACTIONS, BOX, BOX_ON_TARGET, PLAYER, TARGET, Board, Layout, layout
from .env import PLAYER_ON_TARGET

NO_ACTION = 0


@lru_cache(maxsize=1)
def tile_atlas() -> np.ndarray:
    """The (7, 16, 16, 3) tiles of the ``state`` codes 0-6, drawn by :func:`sokoban_render.render_rgb`
    itself (a one-cell room per code), so a batch's images are the runtime's pixel for pixel."""
    cells = [render_rgb([[code]], [[code]]) for code in range(PLAYER + 1)]  # 0-5: the code's own tile
    cells.append(render_rgb([[TARGET]], [[PLAYER]]))  # 6: a player on a target
    atlas = np.stack(cells)
    atlas.flags.writeable = False
    return atlas


class BoardTable:
    """Stored boards of one shape as arrays, each with its steps tabulated.

    ``fixed``: (N, H*W) uint8 ``room_fixed`` codes, cells numbered ``row * W + column``;
    ``player``, ``box``, ``target``: (N,) the initial cells and the target. ``ahead[n, cell, a]``
    is the cell action ``a`` (0-4) steps onto from ``cell`` (``cell`` itself where that is a
    wall or off the board, and for action 0), ``beyond[n, cell, a]`` the cell one further, where a
    pushed box goes (-1 where it is not open). Both come from the room's
    :func:`sokoban_tools.rules.board.layout`, the one definition of a step.
    """

    def __init__(self, boards: Sequence[Board]):
        if not boards:
            raise ValueError("a board table needs at least one board")
        shapes = {(board.height, board.width) for board in boards}
        if len(shapes) != 1:
            raise ValueError(f"a board table holds boards of one shape, got {sorted(shapes)}")
        (self.height, self.width), = shapes
        self.fixed = np.array([[code for row in board.room_fixed for code in row] for board in boards], np.uint8)
        self.player = np.array([self.cell(board.player) for board in boards], np.int64)
        self.box = np.array([self.cell(board.box) for board in boards], np.int64)
        self.target = np.array([self.cell(board.target) for board in boards], np.int64)
        steps = {}  # one table per room: rooms repeat
        for board in boards:
            if board.room_fixed not in steps:
                steps[board.room_fixed] = self._steps(layout(board.room_fixed))
        self.ahead = np.stack([steps[board.room_fixed][0] for board in boards])
        self.beyond = np.stack([steps[board.room_fixed][1] for board in boards])
        for array in (self.fixed, self.player, self.box, self.target, self.ahead, self.beyond):
            array.flags.writeable = False

    def cell(self, coords: tuple[int, int]) -> int:
        return coords[0] * self.width + coords[1]

    def _steps(self, room: Layout) -> tuple[np.ndarray, np.ndarray]:
        """``ahead`` and ``beyond`` of one room from its layout's exits (flat cells of its own stride)."""
        cells = self.height * self.width
        ahead = np.repeat(np.arange(cells)[:, None], len(ACTIONS) + 1, axis=1)
        beyond = np.full((cells, len(ACTIONS) + 1), -1, np.int64)
        ours = {flat: self.cell(coords) for flat, coords in enumerate(room.coords) if coords[1] < self.width}
        for flat, exits in enumerate(room.exits):
            for action, step, further, _ in exits:
                ahead[ours[flat], action] = ours[step]
                beyond[ours[flat], action] = ours[further] if further >= 0 else -1
        return ahead, beyond

    def __len__(self) -> int:
        return len(self.fixed)


class BoardBatch:
    """B positions over a :class:`BoardTable`, stepped together; see the module docstring.

    :meth:`start` puts stored boards on some of the B slots; :meth:`play` steps every slot
    and returns ``(reward, done, won, effective)`` arrays (float64 and bool), the runtime's
    ``reward``, ``done``, ``info["won"]`` and ``info["action_is_effective"]`` of each slot;
    :meth:`states` is the ``state`` render of every slot (codes 0-6, a player on a target 6),
    :meth:`images` the ``rgb_array`` render.
    """

    def __init__(self, table: BoardTable, size: int, max_steps: int = DEFAULT_MAX_STEPS):
        self.table = table
        self.size = integer("size", size, 1)
        self.max_steps = integer("max_steps", max_steps, 1)
        self.board = np.zeros(self.size, np.int64)  # each slot's row of the table
        self.player = table.player[self.board].copy()
        self.box = table.box[self.board].copy()
        self.steps = np.zeros(self.size, np.int64)  # counted steps (actions 1-4), as num_env_steps
        self._slots = np.arange(self.size)

    def start(self, slots, boards) -> None:
        """Put the table's boards ``boards`` on ``slots`` (index arrays or masks), at their initial position."""
        self.board[slots] = boards
        chosen = self.board[slots]
        self.player[slots], self.box[slots], self.steps[slots] = self.table.player[chosen], self.table.box[chosen], 0

    def play(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Step every slot by its action 0-4 (an int array of length B, checked by the caller)."""
        table, board, player, box = self.table, self.board, self.player, self.box
        ahead = table.ahead[board, player, actions]
        beyond = table.beyond[board, player, actions]
        pushing = ahead == box  # never for action 0, whose ahead is the player's own cell
        blocked = pushing & (beyond < 0)  # the box cannot move: neither does the player
        moved_player = np.where(blocked, player, ahead)
        moved_box = np.where(pushing & ~blocked, beyond, box)
        target = table.target[board]
        before, after = box == target, moved_box == target
        counted = actions != NO_ACTION
        self.steps += counted
        # the same float operations as step_reward: the penalty, then the target's change, then the bonus
        change = np.where(after & ~before, BOX_ON_TARGET_REWARD, np.where(before & ~after, BOX_OFF_TARGET_PENALTY, 0.0))
        reward = STEP_PENALTY + change
        won = counted & after
        reward = np.where(won, reward + WIN_REWARD, reward)
        done = counted & (after | (self.steps == self.max_steps))
        effective = moved_player != player
        self.player, self.box = moved_player, moved_box
        return reward, done, won, effective

    def states(self) -> np.ndarray:
        """The ``state`` render of every slot: (B, H*W) uint8 codes."""
        table, slots = self.table, self._slots
        states = table.fixed[self.board]  # a new array
        on_target = table.fixed[self.board, self.box] == TARGET
        states[slots, self.box] = np.where(on_target, BOX_ON_TARGET, BOX)
        on_target = table.fixed[self.board, self.player] == TARGET
        states[slots, self.player] = np.where(on_target, PLAYER_ON_TARGET, PLAYER)
        return states

    def images(self, states: np.ndarray | None = None) -> np.ndarray:
        """The ``rgb_array`` render of every slot: (B, H*16, W*16, 3) uint8, the runtime's pixels."""
        states = self.states() if states is None else states
        height, width = self.table.height, self.table.width
        tiles = tile_atlas()[states.reshape(-1, height, width)]  # (B, H, W, 16, 16, 3)
        return tiles.swapaxes(2, 3).reshape(len(states), height * TILE_SIZE, width * TILE_SIZE, 3)
