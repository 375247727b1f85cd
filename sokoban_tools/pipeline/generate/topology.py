"""The room topology of verl-agent's generator: a random walk that stamps floor.

The walk starts at a random inner cell, keeps one of four directions or, with
some chance each step, picks a new one, and at every cell it reaches stamps one
of five small floor masks; the outer ring stays wall. This module follows the
original's draws one for one and returns the floor as bits of flat cells
(``row * (width + 1) + column``, :class:`~sokoban_tools.rules.board.Layout`'s
numbering), an int that is cheap to build and to use as a cache key.

It needs nothing but the standard library, so a test can run it on every
supported CPython and hold its draws to the same stream.
"""

from __future__ import annotations

import random
from functools import lru_cache

# Walk directions, in the original's order.
DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))
# Floor stamps: 3x3 masks, as (row, column) offsets of their ones from the
# mask's top-left corner, in the original's order.
MASKS = (
    ((1, 0), (1, 1), (1, 2)),
    ((0, 1), (1, 1), (2, 1)),
    ((1, 0), (1, 1), (2, 1)),
    ((1, 0), (1, 1), (2, 0), (2, 1)),
    ((1, 1), (1, 2), (2, 1)),
)
# CPython's random.sample(x, 1) and random.choice(x) draw getrandbits of
# len(x).bit_length() bits until the number is below len(x): 3 bits for 4 directions or 5 masks.
DRAW_BITS = 3


def random_floor(rng: random.Random, dim_room: tuple[int, int], num_steps: int, p_change_directions: float) -> int:
    """The floor cells, as bits, of the original's topology walk drawn from ``rng``.

    The original picks a direction or a mask with ``random.sample(x, 1)[0]``,
    one draw of an index below ``len(x)``; the loop draws that index from
    ``getrandbits`` as CPython does, without two Python calls a step.
    """
    height, width = dim_room
    steps, stamps = _walk_tables(height, width)
    direction = rng.choice(steps)
    row = rng.randint(1, height - 1)
    cell = row * (width + 1) + rng.randint(1, width - 1)
    floor = 0
    uniform, bits = rng.random, rng.getrandbits  # the hottest loop of the generator
    directions, masks = len(DIRECTIONS), len(MASKS)
    for _ in range(num_steps):
        if uniform() < p_change_directions:
            drawn = bits(DRAW_BITS)
            while drawn >= directions:
                drawn = bits(DRAW_BITS)
            direction = steps[drawn]
        cell = direction[cell]
        drawn = bits(DRAW_BITS)
        while drawn >= masks:
            drawn = bits(DRAW_BITS)
        floor |= stamps[cell][drawn]
    return floor


@lru_cache(maxsize=None)
def _walk_tables(height: int, width: int) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """The walk on flat cells: for each direction, every cell's next cell, kept
    off the border; for every cell, the inner cells each mask centred there
    stamps, as bits (the border ends up wall whatever is stamped on it)."""
    if len(DIRECTIONS).bit_length() != DRAW_BITS or len(MASKS).bit_length() != DRAW_BITS:
        raise AssertionError("a direction or mask is drawn with DRAW_BITS bits")
    stride = width + 1
    cells = [divmod(cell, stride) for cell in range(height * stride)]

    def inner(r: int, c: int) -> bool:
        return 0 < r < height - 1 and 0 < c < width - 1

    steps = tuple(
        tuple(max(min(r + dr, height - 2), 1) * stride + max(min(c + dc, width - 2), 1) for r, c in cells)
        for dr, dc in DIRECTIONS
    )
    stamps = tuple(
        tuple(sum(1 << (r - 1 + dr) * stride + c - 1 + dc for dr, dc in mask if inner(r - 1 + dr, c - 1 + dc))
              for mask in MASKS)
        for r, c in cells
    )
    return steps, stamps
