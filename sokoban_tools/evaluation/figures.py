"""The card's pictures of boards: a sheet of validation boards and a solution's replay.

Drawn with Pillow and the game's own renderer, pixel for pixel the images a
model sees, so regenerating them needs nothing beyond the project's
dependencies; PNG bytes are deterministic (see :mod:`.images`). Charts are
:mod:`.charts`. Every picture is labelled, so a reader who has never seen
gym-sokoban's tiles can tell which board, which tile and which action is shown.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..records.rows import BoardRow
from ..rules.board import ACTION_NAMES, BOX, BOX_ON_TARGET, FLOOR, PLAYER, TARGET, WALL, Board
from ..rules.images import contact_sheet, png_bytes, render_board, replay_frames
from sokoban_render import render_rgb

# Pillow's built-in font at 12 px; at its default 10 px the shaped text runs words together.
FONT = ImageFont.load_default(size=12)
CAPTION_HEIGHT = 18
# (label, room_fixed code, room_state code) of each tile the boards use.
TILE_LEGEND = (
    ("wall", WALL, WALL), ("floor", FLOOR, FLOOR), ("target", TARGET, TARGET), ("box", FLOOR, BOX),
    ("box on target", TARGET, BOX_ON_TARGET), ("player", FLOOR, PLAYER), ("player on target", TARGET, PLAYER),
)


def _captioned(image: np.ndarray, caption: str) -> np.ndarray:
    """``image`` with ``caption`` centred in a white band below it."""
    height, width = image.shape[:2]
    canvas = Image.new("RGB", (width, height + CAPTION_HEIGHT), (255, 255, 255))
    canvas.paste(Image.fromarray(image), (0, 0))
    ImageDraw.Draw(canvas).text((width / 2, height + 3), caption, fill=(0, 0, 0), font=FONT, anchor="mt")
    return np.asarray(canvas)


def _legend() -> np.ndarray:
    """One row of the seven tiles, each followed by its name."""
    width = sum(16 + 6 + int(FONT.getlength(label)) + 16 for label, _, _ in TILE_LEGEND)
    canvas = Image.new("RGB", (width, 16), (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    x = 0
    for label, fixed, state in TILE_LEGEND:
        canvas.paste(Image.fromarray(render_rgb([[fixed]], [[state]])), (x, 0))
        draw.text((x + 22, 8), label, fill=(0, 0, 0), font=FONT, anchor="lm")
        x += 16 + 6 + int(FONT.getlength(label)) + 16
    return np.asarray(canvas)


def board_sheet(rows: list[BoardRow], columns: int = 8) -> bytes:
    """PNG of the initial game images of ``rows``, ``columns`` to a row, each
    captioned with its task ID, above a legend of the tiles."""
    boards = contact_sheet([_captioned(render_board(r.board), r.task_id) for r in rows], columns=columns)
    legend = _legend()
    sheet = np.full((boards.shape[0] + legend.shape[0] + 8, max(boards.shape[1], legend.shape[1] + 16), 3),
                    255, dtype=np.uint8)
    sheet[: boards.shape[0], : boards.shape[1]] = boards
    sheet[boards.shape[0] : boards.shape[0] + legend.shape[0], 8 : 8 + legend.shape[1]] = legend
    return png_bytes(sheet)


def replay_strip(board: Board, actions: list[int]) -> bytes:
    """PNG of a board's start and the position after each action, left to right,
    each captioned with the action that led to it."""
    captions = ["start"] + [f"{n}: {ACTION_NAMES[a]}" for n, a in enumerate(actions, start=1)]
    frames = [_captioned(frame, caption) for frame, caption in zip(replay_frames(board, actions), captions)]
    return png_bytes(contact_sheet(frames, columns=len(frames)))
