"""A scripted player that sees only the game image: it reads the board from the pixels.

Helper for tests (not a test file). Each 16x16 tile of the image is matched exactly
against the seven tiles :mod:`sokoban_render` draws (wall, floor, target, box on
target, box, player, player on target), so the player knows nothing the image does
not show; it then plays :func:`sokoban_tools.rules.solver.shortest_solution` from there.
"""

from __future__ import annotations

import numpy as np

from sokoban_render import TILE_SIZE, render_rgb
from sokoban_tools.rules.board import Board
from sokoban_tools.rules.solver import shortest_solution

# (room_fixed, room_state) code of each tile, as gym-sokoban draws a cell
CELLS = ((0, 0), (1, 1), (2, 2), (2, 3), (1, 4), (1, 5), (2, 5))
TILES = {cell: render_rgb([[cell[0]]], [[cell[1]]]).tobytes() for cell in CELLS}
BY_PIXELS = {pixels: cell for cell, pixels in TILES.items()}


def board_from_image(image) -> Board:
    """The position an (H*16, W*16, 3) uint8 game image shows; KeyError on a tile it is not."""
    pixels = np.asarray(image, dtype=np.uint8)
    height, width = pixels.shape[0] // TILE_SIZE, pixels.shape[1] // TILE_SIZE
    fixed, state = [], []
    for row in range(height):
        cells = [BY_PIXELS[np.ascontiguousarray(
            pixels[row * TILE_SIZE:(row + 1) * TILE_SIZE, column * TILE_SIZE:(column + 1) * TILE_SIZE]).tobytes()]
            for column in range(width)]
        fixed.append([cell[0] for cell in cells])
        state.append([cell[1] for cell in cells])
    return Board.from_rooms(fixed, state)


def plan(image) -> list[int]:
    """The shortest solution (actions 1-4) from the position the image shows."""
    actions = shortest_solution(board_from_image(image))
    assert actions, "the image shows a solved or unsolvable position"
    return actions
