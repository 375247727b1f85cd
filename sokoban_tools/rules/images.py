"""Board images for people: PNG files, contact sheets and GIF replays.

The pixels come from :func:`sokoban_render.render_rgb`, the same game image the
environment shows its model; this module only lays them out and writes them.
Files are written atomically (a temporary file in the target directory, then
``os.replace``) and PNG bytes are deterministic, so regenerating a picture from
the same pixels gives a byte-identical file.
"""

from __future__ import annotations

import io
from typing import Sequence

import numpy as np
from PIL import Image

from sokoban_render import encode_png, render_rgb

from ..files import write_atomic
from .board import Board, play


def render_board(board: Board) -> np.ndarray:
    """The game image of a board position, (H*16, W*16, 3) uint8."""
    return render_rgb(board.room_fixed, board.room_state())


def replay_frames(board: Board, actions: Sequence[int]) -> list[np.ndarray]:
    """The game images of ``board`` and of the position after each action."""
    return [render_board(board)] + [render_board(after) for after, _ in play(board, actions)]


def _rgb(image) -> np.ndarray:
    array = np.asarray(image)
    if array.ndim != 3 or array.shape[2] != 3 or array.dtype != np.uint8:
        raise ValueError(f"expected an (H, W, 3) uint8 image, got {array.shape} {array.dtype}")
    return array


def png_bytes(image) -> bytes:
    """Lossless PNG encoding of an RGB image with no metadata chunks, compressed
    hard because it is written to disk for people."""
    return encode_png(_rgb(image), level=9)


def save_png(path, image) -> None:
    """Write an (H, W, 3) uint8 image as a PNG, atomically and deterministically."""
    write_atomic(path, png_bytes(image))


def contact_sheet(
    images: Sequence[np.ndarray],
    columns: int,
    gap: int = 8,
    background: tuple[int, int, int] = (255, 255, 255),
) -> np.ndarray:
    """Lay images out in rows of ``columns``, ``gap`` pixels apart and from the edge.

    Every cell has the size of the largest image; smaller images sit at its top
    left. With n images of cell size (h, w), ``c = min(columns, n)`` and
    ``r = ceil(n / c)``, the sheet is ``(r*h + (r+1)*gap, c*w + (c+1)*gap, 3)``.
    """
    arrays = [_rgb(image) for image in images]
    if not arrays:
        raise ValueError("a contact sheet needs at least one image")
    if columns < 1 or gap < 0:
        raise ValueError("columns must be positive and gap non-negative")
    cols = min(columns, len(arrays))
    rows = -(-len(arrays) // cols)
    cell_h = max(a.shape[0] for a in arrays)
    cell_w = max(a.shape[1] for a in arrays)
    sheet = np.empty((rows * cell_h + (rows + 1) * gap, cols * cell_w + (cols + 1) * gap, 3), dtype=np.uint8)
    sheet[...] = np.asarray(background, dtype=np.uint8)
    for i, array in enumerate(arrays):
        top = gap + (i // cols) * (cell_h + gap)
        left = gap + (i % cols) * (cell_w + gap)
        sheet[top:top + array.shape[0], left:left + array.shape[1]] = array
    return sheet


def save_gif(path, frames: Sequence[np.ndarray], duration_ms: int) -> None:
    """Write equal-sized RGB frames as a looping animated GIF, atomically.

    Colours are kept exactly (game images use a handful), so more than 256
    distinct colours across all frames is an error. GIF stores delays in
    hundredths of a second, and Pillow merges consecutive identical frames into
    one frame shown for their summed duration.
    """
    arrays = [_rgb(frame) for frame in frames]
    if not arrays:
        raise ValueError("a GIF needs at least one frame")
    if any(a.shape != arrays[0].shape for a in arrays):
        raise ValueError("all GIF frames must have the same size")
    stack = np.stack(arrays)
    colours, indices = np.unique(stack.reshape(-1, 3), axis=0, return_inverse=True)
    if len(colours) > 256:
        raise ValueError(f"{len(colours)} colours do not fit a GIF palette of 256")
    indices = indices.reshape(stack.shape[:3]).astype(np.uint8)
    palette = colours.astype(np.uint8).tobytes()
    pictures = []
    for index in indices:
        picture = Image.fromarray(index, "P")
        picture.putpalette(palette)
        pictures.append(picture)
    buffer = io.BytesIO()
    pictures[0].save(
        buffer, format="GIF", save_all=True, append_images=pictures[1:],
        duration=duration_ms, loop=0, optimize=False,
    )
    write_atomic(path, buffer.getvalue())
