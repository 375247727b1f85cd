"""The game image of a Sokoban board, pixel for pixel gym-sokoban 0.0.6's, and a PNG encoder.

The one definition of the renderer, shared by the loading script (its ``image``
column), the environment workers and the picture tools. It imports only the
standard library and numpy, so an environment worker that renders every step
starts without ``datasets`` or ``pyarrow``; it ships next to
``sokoban_fairness.py`` in the dataset repository, which imports it.
"""

from __future__ import annotations

import struct
import zlib
from functools import lru_cache

import numpy as np


TILE_SIZE = 16

# Tile artwork from gym-sokoban 0.0.6 (Max-Philipp Schrader, MIT licence),
# files gym_sokoban/envs/surface/*.png, transcribed losslessly: each tile is
# 16 rows of 16 palette keys. The seven tiles use ten colours in all.
_PALETTE = {
    ".": (0, 0, 0),        # black ground
    "#": (176, 61, 0),     # brick
    "+": (176, 154, 142),  # mortar
    "d": (215, 103, 0),    # box wood, dark
    "w": (215, 114, 0),    # box wood
    "y": (215, 196, 0),    # box face
    "r": (238, 0, 0),      # target red
    "o": (239, 22, 22),    # target outline
    "*": (242, 26, 26),    # target centre
    "g": (41, 202, 26),    # player green
}

# Tile i is drawn for gym-sokoban surface id i: 0 wall, 1 floor, 2 target,
# 3 box on target, 4 box, 5 player, 6 player on target.
_TILES = (
    (  # wall
        "#####+######+###", "#####+######+###", "#####+######+###", "#####+######+###",
        "++++++++++++++++", "++++++++++++++++", "###+#######+####", "###+#######+####",
        "###+#######+####", "###+#######+####", "++++++++++++++++", "++++++++++++++++",
        "#####+######+###", "#####+######+###", "#####+######+###", "#####+######+###",
    ),
    ("................",) * 16,  # floor
    (  # target
        "................", ".oooooooooooooo.", ".o............o.", ".o............o.",
        ".o............o.", ".o.....r......o.", ".o....r*r.....o.", ".o...r***r....o.",
        ".o....r*r.....o.", ".o.....r......o.", ".o............o.", ".o............o.",
        ".o............o.", ".o............o.", ".oooooooooooooo.", "................",
    ),
    (  # box on target
        "rrrrrrrrrrrrrrrr", "rrrrrrrrrrrrrrrr", "rrwwyyyyyyyyydrr", "rrywdyyyyyyywwrr",
        "rrywwdyyyyywwyrr", "rryywwwyyywwyyrr", "rryyydwwywwyyyrr", "rryyyydrrdyyyyrr",
        "rryyyydrrdyyyyrr", "rryyyywwywwyyyrr", "rryyywwyywwwyyrr", "rrydwwyyyydwwyrr",
        "rrddwyyyyyydwwrr", "rrwwyyyyyyyydwrr", "rrrrrrrrrrrrrrrr", "rrrrrrrrrrrrrrrr",
    ),
    (  # box
        "ddddwwwwwwwwwwdd", "ddwwyyyyyyyywwwd", "dwwwyyyyyyyyydww", "wwywdyyyyyyywwyw",
        "wyywwdyyyyywwyyw", "wyyywwwyyywwyyyw", "wyyyydwwywwyyyyw", "wyyyyyddddyyyyyw",
        "wyyyyyddddyyyyyw", "wyyyyywwywwyyyyw", "wyyyywwyywwwyyyw", "wwydwwyyyydwwyyw",
        "wwddwyyyyyydwwww", "dwwwyyyyyyyydwwd", "ddwwyyyyyyyywwdd", "dddwwwwwwwwwwddd",
    ),
    (  # player
        "...g........g...", "...gg......gg...", "....gggggggg....", "....gggggggg....",
        "...gg..gg..gg...", "..ggg..gg..ggg..", ".gggggggggggggg.", "gggggggggggggggg",
        "gggggggggggggggg", "gggggggggggggggg", "gggggggggggggggg", "gggggggggggggggg",
        "..gggggggggggg..", "....g......g....", "....g......g....", "....g......g....",
    ),
    (  # player on target
        "...g........g...", ".rrggrrrrrrggrr.", ".r..gggggggg..r.", ".r..gggggggg..r.",
        ".r.gg..gg..gg.r.", ".rggg..gg..gggr.", ".gggggggggggggg.", "gggggggggggggggg",
        "gggggggggggggggg", "gggggggggggggggg", "gggggggggggggggg", "gggggggggggggggg",
        ".rggggggggggggr.", ".r..g......g..r.", ".rrrgrrrrrrgrrr.", "....g......g....",
    ),
)


def _build_index_atlas() -> np.ndarray:
    """Decode the tiles into a read-only (7, 16, 16) array of indices into :data:`PALETTE`."""
    lookup = np.zeros(128, dtype=np.uint8)
    lookup[[ord(k) for k in _PALETTE]] = np.arange(len(_PALETTE))
    codes = np.array([[list(map(ord, row)) for row in tile] for tile in _TILES])
    if codes.shape != (7, TILE_SIZE, TILE_SIZE):
        raise AssertionError(f"tile table has shape {codes.shape}")
    return _read_only(lookup[codes])


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


PALETTE = _read_only(np.array(list(_PALETTE.values()), dtype=np.uint8))  # (10, 3) RGB
_INDEX_ATLAS = _build_index_atlas()
_RGB_ATLAS = _read_only(PALETTE[_INDEX_ATLAS])  # (7, 16, 16, 3)


def _draw(atlas: np.ndarray, room_fixed, room_state) -> np.ndarray:
    """Lay out one ``atlas`` tile per cell: the tile of the cell's ``room_state``
    code, or tile 6 for a player standing on a target of ``room_fixed``."""
    fixed = np.asarray(room_fixed)
    state = np.asarray(room_state)
    if state.ndim != 2 or fixed.shape != state.shape:
        raise ValueError(f"room_fixed {fixed.shape} and room_state {state.shape} must be equal 2-D shapes")
    if state.dtype.kind not in "iu" or (state.size and (state.min() < 0 or state.max() > 5)):
        raise ValueError("room_state codes must be integers in 0..5")
    tile = state + ((state == 5) & (fixed == 2))
    height, width = state.shape
    cells = atlas[tile]  # (H, W, 16, 16, ...)
    return cells.swapaxes(1, 2).reshape(height * TILE_SIZE, width * TILE_SIZE, *atlas.shape[3:])


def render_rgb(room_fixed, room_state) -> np.ndarray:
    """The RGB image gym-sokoban 0.0.6 (``room_to_rgb``) draws for a board.

    ``room_fixed`` (0 wall, 1 floor, 2 target) and ``room_state`` (0 wall, 1 floor,
    2 target, 3 box on target, 4 box, 5 player) are equal-shaped nested lists or
    arrays. Each cell becomes a 16x16 tile chosen by ``room_state``, except that a
    player on a target cell of ``room_fixed`` gets its own tile. Note the argument
    order is the reverse of gym-sokoban's ``room_to_rgb(room_state, room_fixed)``.

    Returns a new (H*16, W*16, 3) uint8 array.
    """
    return _draw(_RGB_ATLAS, room_fixed, room_state)


@lru_cache(maxsize=1024)
def _empty_room(room_fixed: tuple) -> np.ndarray:
    """The read-only image of a room with no box or player (its codes are tiles 0-2)."""
    if any(code not in (0, 1, 2) for row in room_fixed for code in row):
        raise ValueError("room_fixed codes must be 0 wall, 1 floor or 2 target")
    return _read_only(render_rgb(room_fixed, room_fixed))


def render_position(room_fixed: tuple, player: tuple[int, int], box: tuple[int, int]) -> np.ndarray:
    """:func:`render_rgb` of a one-box position given by its cells, in a fraction of the time.

    ``room_fixed`` is a tuple of row tuples (the cache key); ``player`` and ``box``
    are (row, column) cells. The empty room is drawn once and kept, and each call
    lays the box's and the player's tiles on a copy: an environment renders every
    step, and a room has few positions but many steps. Returns a new array.
    """
    height, width = len(room_fixed), len(room_fixed[0])
    for row, column in (player, box):
        if not (0 <= row < height and 0 <= column < width):
            raise ValueError(f"cell {(row, column)} is outside the {height}x{width} room")
    image = _empty_room(room_fixed).copy()
    # tiles 3 box on target / 4 box, 6 player on target / 5 player, as render_rgb chooses them
    for (row, column), on_floor, on_target in ((box, 4, 3), (player, 5, 6)):
        tile = on_target if room_fixed[row][column] == 2 else on_floor
        image[row * TILE_SIZE:(row + 1) * TILE_SIZE, column * TILE_SIZE:(column + 1) * TILE_SIZE] = _RGB_ATLAS[tile]
    return image


def render_indices(room_fixed, room_state) -> np.ndarray:
    """The same image as :func:`render_rgb` as (H*16, W*16) uint8 indices into
    :data:`PALETTE`: a third of the bytes, for compact PNGs."""
    return _draw(_INDEX_ATLAS, room_fixed, room_state)


def encode_png(pixels: np.ndarray, palette: np.ndarray | None = None, level: int = 1) -> bytes:
    """A PNG file, without filters or metadata, of an (H, W, 3) uint8 RGB image,
    or of (H, W) uint8 indices into an (N, 3) ``palette`` (N <= 256).

    Written with zlib directly because encoding, not rendering, is what an image
    column costs: this takes a fraction of Pillow's time, and its bytes depend
    only on the pixels, the palette and ``level`` (zlib's 0-9).
    """
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    if palette is None and (pixels.ndim != 3 or pixels.shape[2] != 3):
        raise ValueError(f"expected an (H, W, 3) RGB image, got shape {pixels.shape}")
    if palette is not None and pixels.ndim != 2:
        raise ValueError(f"expected (H, W) palette indices, got shape {pixels.shape}")
    height, width = pixels.shape[:2]
    row_bytes = pixels[0].size
    scanlines = np.zeros((height, 1 + row_bytes), dtype=np.uint8)  # filter byte 0 per row
    scanlines[:, 1:] = pixels.reshape(height, row_bytes)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    colour_type = 2 if palette is None else 3
    parts = [b"\x89PNG\r\n\x1a\n", chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0))]
    if palette is not None:
        parts.append(chunk(b"PLTE", np.ascontiguousarray(palette, dtype=np.uint8).tobytes()))
    parts += [chunk(b"IDAT", zlib.compress(scanlines.tobytes(), level)), chunk(b"IEND", b"")]
    return b"".join(parts)
