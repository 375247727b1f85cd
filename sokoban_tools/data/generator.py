"""A seed-for-seed reimplementation of verl-agent's Sokoban room generator.

verl-agent seeds Python's ``random`` and numpy's legacy global RNG, then calls
``generate_room``: a random-walk room topology, a random player and box (the
box starts on what becomes its target), a depth-limited reverse-play search
that pulls the box as far from its target as it can, and a short random walk
of the player. This module follows the same algorithm and consumes the same
random numbers in the same order, but from RNG objects it owns
(``random.Random`` and ``numpy.random.RandomState`` seeded with ``seed``
produce the streams those global seeds produce), so it never touches global
state.

Only one box is supported: that is the configuration the dataset is built
with, and it lets the search state be two cells instead of a whole grid. The
searches move on the flat cell indices of :func:`board.layout`, the rules'
one definition of a step.

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

import numpy as np

from ..rules.board import FLOOR, TARGET, WALL, Board, Grid, Layout, forget_layouts, layout

# Walk directions of the topology generator, in the original's order.
TOPOLOGY_DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))
# Floor stamps of the topology generator: 3x3 masks, as (row, column) offsets of
# their ones from the mask's top-left corner, in the original's order.
TOPOLOGY_MASKS = (
    ((1, 0), (1, 1), (1, 2)),
    ((0, 1), (1, 1), (2, 1)),
    ((1, 0), (1, 1), (2, 1)),
    ((1, 0), (1, 1), (2, 0), (2, 1)),
    ((1, 1), (1, 2), (2, 1)),
)
# The original stops its reverse search after this many explored states.
MAX_EXPLORED_STATES = 300_000
NO_SCORE_MESSAGE = "Generated Model with score == 0"


@dataclass(frozen=True)
class GeneratorConfig:
    """The parameters of ``generate_room`` as verl-agent's Sokoban environment uses them."""

    dim_room: tuple[int, int] = (6, 6)
    num_boxes: int = 1
    search_depth: int = 30
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
        level = _topology(py_rng, config)
        walls, room, floor = _shape(bytes(level), height, width)
        floor = list(floor)
        if len(floor) <= 2:
            return Rejection(
                seed, f"Not enough free spots (#{len(floor)}) to place 1 player and 1 boxes."
            )
        player = floor.pop(np_rng.randint(len(floor)))
        target = floor[np_rng.randint(len(floor))]
        score, player, box = _reverse_play(walls, player, target, config.search_depth)
        if score > 0:
            break
    else:
        return Rejection(seed, NO_SCORE_MESSAGE)
    (box_row, box_col), (target_row, target_col) = room.coords[box], room.coords[target]
    displacement = abs(box_row - target_row) + abs(box_col - target_col)
    player = _random_walk(py_rng, room, player, box, config, one_cell=displacement == 1)
    level[target] = TARGET
    return Board(_grid(level, height, width), room.coords[player], room.coords[box])


def forget_rooms() -> None:
    """Empty the caches of room shapes and searches, so that a timing starts as
    a fresh process does."""
    _shape.cache_clear()
    _reverse_play.cache_clear()
    _distances.cache_clear()
    forget_layouts()


@lru_cache(maxsize=1 << 14)
def _shape(level: bytes, height: int, width: int) -> tuple[Grid, Layout, tuple[int, ...]]:
    """A topology's rows, layout and floor cells in row order (the few thousand
    shapes recur across seeds, so each is derived once)."""
    walls = _grid(level, height, width)
    room = layout(walls)
    if room.stride != width + 1:
        raise AssertionError("the topology's flat cells must be the layout's")
    return walls, room, tuple(cell for cell, code in enumerate(level) if code == FLOOR)


def _grid(level: bytes | bytearray, height: int, width: int) -> Grid:
    """The rows of a flat room whose rows are ``width + 1`` cells apart, as in :class:`Layout`."""
    return tuple(tuple(level[r * (width + 1):r * (width + 1) + width]) for r in range(height))


@lru_cache(maxsize=None)
def _walk_tables(height: int, width: int) -> tuple[tuple, tuple]:
    """The topology walk precomputed on flat cells (``Layout``'s numbering):
    for each walk direction, every cell's next cell, kept off the border; for
    every cell, the inner cells each floor mask centred there stamps (the
    border ends up wall whatever is stamped on it)."""
    stride = width + 1
    cells = [divmod(cell, stride) for cell in range(height * stride)]

    def inner(r: int, c: int) -> bool:
        return 0 < r < height - 1 and 0 < c < width - 1

    steps = tuple(
        tuple(max(min(r + dr, height - 2), 1) * stride + max(min(c + dc, width - 2), 1) for r, c in cells)
        for dr, dc in TOPOLOGY_DIRECTIONS
    )
    stamps = tuple(
        tuple(tuple((r - 1 + dr) * stride + c - 1 + dc for dr, dc in mask if inner(r - 1 + dr, c - 1 + dc))
              for mask in TOPOLOGY_MASKS)
        for r, c in cells
    )
    return steps, stamps


def _topology(rng: random.Random, config: GeneratorConfig) -> bytearray:
    """Walls and floor, on flat cells, from a random walk that stamps floor masks.

    Choosing among the direction tables or a cell's mask stamps draws what
    choosing among the original's directions or masks draws: the same number
    of options in the same order. ``rng.choice(x)`` draws exactly what the
    original's ``random.sample(x, 1)[0]`` draws (one ``_randbelow(len(x))``);
    a test holds the two streams equal on CPython 3.10 to 3.13.
    """
    height, width = config.dim_room
    steps, stamps = _walk_tables(height, width)
    direction = rng.choice(steps)
    row = rng.randint(1, height - 1)
    cell = row * (width + 1) + rng.randint(1, width - 1)
    level = bytearray([WALL]) * (height * (width + 1))
    uniform, choice, p_change = rng.random, rng.choice, config.p_change_directions  # the hottest loop
    for _ in range(config.num_steps):
        if uniform() < p_change:
            direction = choice(steps)
        cell = direction[cell]
        for stamped in choice(stamps[cell]):
            level[stamped] = FLOOR
    return level


@lru_cache(maxsize=1 << 16)
def _reverse_play(walls: Grid, player: int, target: int, search_depth: int) -> tuple[int, int, int]:
    """The original's depth-first reverse search, which walks the player and pulls
    the box; returns the highest score and the first (player, box) cells reaching it.

    A state is the player's and box's cells plus whether the box was ever pulled
    (the original's grid marks a pulled box 3 and an unpulled one 4, so the two
    are different explored states). Its score is the box's Manhattan distance
    from the target once pulled, but 0 while the player stands on the target.
    Cells are ``walls``' :class:`Layout` cells.
    A state first met with little depth left is never expanded again, exactly
    as in the original. A step onto the box is the original's no-op move, which
    only revisits an explored state, so it is skipped. The original also stops
    after 300,000 explored states, which a one-box room of n cells, with at
    most 2n² states, cannot reach below 387 cells.

    Rooms repeat across seeds, so results are cached: a search is a pure
    function of its arguments.
    """
    room = layout(walls)
    exits, coords = room.exits, room.coords
    cells = len(exits)
    if 2 * cells * cells >= MAX_EXPLORED_STATES:
        raise ValueError(f"a {cells}-cell room could reach the original's state cap, which this search omits")
    distance = _distances(coords, target)
    explored: set[int] = set()
    best = [-1, player, target]

    def visit(state, player, box, pulled, ttl):
        explored.add(state)
        score = distance[box] if pulled and player != target else 0
        if score > best[0]:
            best[:] = score, player, box
        if ttl > 1:
            for _, ahead, _, behind in exits[player]:
                if ahead == box:
                    continue
                if box == behind:
                    child = (ahead * cells + player) * 2 + 1
                    if child not in explored:
                        visit(child, ahead, player, 1, ttl - 1)
                else:
                    child = (ahead * cells + box) * 2 + pulled
                    if child not in explored:
                        visit(child, ahead, box, pulled, ttl - 1)

    if search_depth > 1:
        visit(player * cells * 2 + target * 2, player, target, 0, search_depth - 1)
    return best[0], best[1], best[2]


@lru_cache(maxsize=1024)
def _distances(coords: tuple[tuple[int, int], ...], target: int) -> tuple[int, ...]:
    """Every cell's Manhattan distance from ``target``."""
    target_row, target_col = coords[target]
    return tuple(abs(r - target_row) + abs(c - target_col) for r, c in coords)


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
