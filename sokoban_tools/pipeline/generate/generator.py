"""A seed-for-seed reimplementation of verl-agent's Sokoban room generator.

verl-agent seeds Python's ``random`` and numpy's legacy global RNG, then calls
``generate_room``: a random-walk room topology (:mod:`.topology`), a random
player and box (the box starts on what becomes its target), a depth-limited
reverse-play search that pulls the box as far from its target as it can, and
a short random walk of the player. This module follows the same algorithm and consumes the same
random numbers in the same order, but from RNG objects it owns
(``random.Random`` and ``numpy.random.RandomState`` seeded with ``seed``
produce the streams those global seeds produce), so it never touches global
state.

Only one box is supported: that is the configuration the dataset is built
with, and it lets the search state be two cells instead of a whole grid. The
topology and the searches use the flat cell indices of :func:`board.layout`,
the rules' one definition of a step.

Where the original raises, :func:`generate` returns a :class:`Rejection`. The
original environment then retries with ``abs(hash(str(seed))) % 2**32``, which
depends on the per-process string-hash salt; a frozen dataset cannot repeat
that, so it records the seed as rejected instead.
"""

from __future__ import annotations

import random
import threading
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ...protocol import DIM_ROOM, NUM_BOXES, SEARCH_DEPTH
from ...rules.board import FLOOR, TARGET, WALL, Board, Grid, Layout, forget_layouts, layout
from .topology import random_floor

# The original stops its reverse search after this many explored states.
MAX_EXPLORED_STATES = 300_000
NO_SCORE_MESSAGE = "Generated Model with score == 0"


@dataclass(frozen=True)
class GeneratorConfig:
    """The parameters of ``generate_room`` as verl-agent's Sokoban environment uses them."""

    dim_room: tuple[int, int] = DIM_ROOM
    num_boxes: int = NUM_BOXES
    search_depth: int = SEARCH_DEPTH
    num_steps: int = 20
    p_change_directions: float = 0.35
    tries: int = 4
    # The final random player walk: chance to move at all (when the box was
    # displaced by exactly one cell, and otherwise), chance to continue, step cap.
    move_probability_one_cell: float = 0.8
    move_probability: float = 0.5
    continue_probability: float = 0.5
    max_walk_steps: int = 3

    def as_dict(self) -> dict:
        return {**asdict(self), "dim_room": list(self.dim_room)}


@dataclass(frozen=True)
class Rejection:
    """A seed for which the original raises instead of returning a room."""

    seed: int
    reason: str


# One numpy RNG per thread, re-seeded for every seed: constructing a
# RandomState first seeds it from OS entropy, which costs more than a whole room.
_numpy_rngs = threading.local()


def _numpy_rng(seed: int) -> np.random.RandomState:
    rng = getattr(_numpy_rngs, "rng", None)
    if rng is None:
        rng = _numpy_rngs.rng = np.random.RandomState()
    rng.seed(seed)
    return rng


def generate(seed: int, config: GeneratorConfig = GeneratorConfig()) -> Board | Rejection:
    """The initial board verl-agent generates for ``seed``, or why it generates none."""
    if config.num_boxes != 1:
        raise ValueError("only one-box rooms are supported")
    py_rng = random.Random(seed)
    np_rng = _numpy_rng(seed)
    height, width = config.dim_room
    for _ in range(config.tries):
        floor_cells = random_floor(py_rng, config.dim_room, config.num_steps, config.p_change_directions)
        shape = _shape(floor_cells, height, width)
        floor = list(shape.floor)
        if len(floor) <= 2:
            return Rejection(
                seed, f"Not enough free spots (#{len(floor)}) to place 1 player and 1 boxes."
            )
        player = floor.pop(np_rng.randint(len(floor)))
        target = floor[np_rng.randint(len(floor))]
        score, player, box = _reverse_play(floor_cells, height, width, player, target, config.search_depth)
        if score > 0:
            break
    else:
        return Rejection(seed, NO_SCORE_MESSAGE)
    coords = shape.room.coords
    (box_row, box_col), (target_row, target_col) = coords[box], coords[target]
    displacement = abs(box_row - target_row) + abs(box_col - target_col)
    player = _random_walk(py_rng, shape.room, player, box, config, one_cell=displacement == 1)
    room_fixed = list(shape.walls)
    room_fixed[target_row] = room_fixed[target_row][:target_col] + (TARGET,) + room_fixed[target_row][target_col + 1:]
    return Board(tuple(room_fixed), coords[player], coords[box])


def forget_rooms() -> None:
    """Empty the caches of room shapes and searches, so that a timing starts as
    a fresh process does."""
    _shape.cache_clear()
    _reverse_play.cache_clear()
    _distances.cache_clear()
    forget_layouts()


class Shape(NamedTuple):
    """What the generator needs of one topology: its rows of wall and floor
    codes, its :class:`Layout`, its floor cells in row order (as the original's
    ``np.where`` lists them), and for each cell the ``(ahead, behind)`` cells of
    its exits in order, which are all the reverse search reads."""

    walls: Grid
    room: Layout
    floor: tuple[int, ...]
    pulls: tuple[tuple[tuple[int, int], ...], ...]


@lru_cache(maxsize=1 << 14)
def _shape(floor_cells: int, height: int, width: int) -> Shape:
    """The :class:`Shape` of a topology's floor bits (flat cells of :class:`Layout`),
    derived once: the few thousand shapes recur across seeds."""
    stride = width + 1
    rows = [(floor_cells >> r * stride) & ((1 << width) - 1) for r in range(height)]
    codes, columns = _row_tables(width)
    walls = tuple(codes[row] for row in rows)
    room = layout(walls)
    if room.stride != stride:
        raise AssertionError("the topology's flat cells must be the layout's")
    floor = tuple(r * stride + c for r, row in enumerate(rows) for c in columns[row])
    pulls = tuple(tuple([(ahead, behind) for _, ahead, _, behind in exits]) if exits else () for exits in room.exits)
    return Shape(walls, room, floor, pulls)


@lru_cache(maxsize=None)
def _row_tables(width: int) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """For each row of floor bits, its codes and its floor columns."""
    patterns = range(1 << width)
    return (tuple(tuple(FLOOR if bits >> c & 1 else WALL for c in range(width)) for bits in patterns),
            tuple(tuple(c for c in range(width) if bits >> c & 1) for bits in patterns))


@lru_cache(maxsize=1 << 16)
def _reverse_play(floor_cells: int, height: int, width: int, player: int, target: int,
                  search_depth: int) -> tuple[int, int, int]:
    """The original's depth-first reverse search, which walks the player and pulls
    the box; returns the highest score and the first (player, box) cells reaching it.

    A state is the player's and box's cells plus whether the box was ever pulled
    (the original's grid marks a pulled box 3 and an unpulled one 4, so the two
    are different explored states). Its score is the box's Manhattan distance
    from the target once pulled, but 0 while the player stands on the target.
    Until the first pull the box stands on the target, so :func:`wander` tracks
    the player alone. Cells are :class:`Layout` cells.
    A state first met with little depth left is never expanded again, exactly
    as in the original. A step onto the box is the original's no-op move, which
    only revisits an explored state, so it is skipped. The original also stops
    after 300,000 explored states, which a one-box room of n cells, with at
    most 2n² states, cannot reach below 387 cells.

    Rooms repeat across seeds, so results are cached: a search is a pure
    function of its arguments.
    """
    shape = _shape(floor_cells, height, width)
    pulls = shape.pulls
    cells = len(pulls)
    if 2 * cells * cells >= MAX_EXPLORED_STATES:
        raise ValueError(f"a {cells}-cell room could reach the original's state cap, which this search omits")
    distance = _distances(height, width, target)
    wandered = bytearray(cells)
    explored = bytearray(cells * cells)  # player * cells + box, once pulled
    best = [-1, player, target]

    def wander(player, ttl):
        wandered[player] = 1
        if ttl > 1:
            for ahead, behind in pulls[player]:
                if ahead == target:
                    continue
                if behind == target:
                    child = ahead * cells + player
                    if not explored[child]:
                        visit(child, ahead, player, ttl - 1)
                elif not wandered[ahead]:
                    wander(ahead, ttl - 1)

    def visit(state, player, box, ttl):
        explored[state] = 1
        if player != target and distance[box] > best[0]:
            best[:] = distance[box], player, box
        if ttl > 1:
            for ahead, behind in pulls[player]:
                if ahead == box:
                    continue
                if box == behind:
                    child = ahead * cells + player
                    if not explored[child]:
                        visit(child, ahead, player, ttl - 1)
                else:
                    child = ahead * cells + box
                    if not explored[child]:
                        visit(child, ahead, box, ttl - 1)

    if search_depth > 1:
        best[0] = 0  # the start, unpulled
        wander(player, search_depth - 1)
    return best[0], best[1], best[2]


@lru_cache(maxsize=1024)
def _distances(height: int, width: int, target: int) -> tuple[int, ...]:
    """Every flat cell's Manhattan distance from ``target``."""
    stride = width + 1
    target_row, target_col = divmod(target, stride)
    return tuple(abs(cell // stride - target_row) + abs(cell % stride - target_col) for cell in range(height * stride))


def _random_walk(rng: random.Random, room: Layout, player: int, box: int, config: GeneratorConfig,
                 one_cell: bool) -> int:
    """Walk the player up to ``max_walk_steps`` cells, never back onto a visited
    cell and never pushing; returns the player's cell."""
    chance = config.move_probability_one_cell if one_cell else config.move_probability
    if rng.random() > chance:
        return player
    visited = [player]
    steps = 0
    while steps < config.max_walk_steps:
        options = [ahead for _, ahead, _, pushed in room.moves(player, box)
                   if not pushed and ahead not in visited]
        if not options:
            break
        player = rng.choice(options)
        visited.append(player)
        steps += 1
        if steps >= config.max_walk_steps or rng.random() > config.continue_probability:
            break
    return player
