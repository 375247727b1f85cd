"""The card's pictures: example boards, length histograms, curves with interval bands.

Drawn with Pillow alone so that regenerating them needs nothing beyond the
project's dependencies; PNG bytes are deterministic (see :mod:`.images`).
Every picture is labelled, so a reader who has never seen gym-sokoban's tiles
can tell which board, which tile and which action is shown.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..rows import BoardRow
from ..rules.board import ACTION_NAMES, BOX, BOX_ON_TARGET, FLOOR, PLAYER, TARGET, WALL, Board
from ..rules.images import contact_sheet, png_bytes, render_board, replay_frames
from sokoban_render import render_rgb

SERIES_COLOURS = ((66, 120, 190), (230, 140, 40), (120, 120, 120))
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


def _series_legend(draw: ImageDraw.ImageDraw, x: float, labels: list[str]) -> None:
    """A row of colour swatches and series labels along the top edge, from ``x``."""
    for j, label in enumerate(labels):
        draw.rectangle([x, 8, x + 12, 20], fill=SERIES_COLOURS[j % len(SERIES_COLOURS)])
        draw.text((x + 18, 14), label, fill=(0, 0, 0), font=FONT, anchor="lm")
        x += 28 + draw.textlength(label, font=FONT)


def length_histogram(series: dict[str, dict[str, int]], width: int = 760, height: int = 300) -> bytes:
    """PNG bar chart of the share of boards per shortest-solution length.

    ``series`` maps a legend label to a histogram (length as a string -> boards);
    bars show shares, so splits of different sizes compare directly, against a
    percentage axis with a gridline every 5%.
    """
    lengths = sorted({int(k) for hist in series.values() for k in hist})
    shares = {
        label: {n: hist.get(str(n), 0) / sum(hist.values()) for n in lengths}
        for label, hist in series.items()
    }
    tick_step = 0.05
    top = tick_step * -(-max(v for s in shares.values() for v in s.values()) // tick_step)
    image = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    left, right, bottom, upper = 44, 10, height - 40, 34
    for tick in range(round(top / tick_step) + 1):
        y = bottom - (bottom - upper) * tick * tick_step / top
        draw.line([(left, y), (width - right, y)], fill=(225, 225, 225))
        draw.text((left - 6, y), f"{tick * tick_step:.0%}", fill=(0, 0, 0), font=FONT, anchor="rm")
    slot = (width - left - right) / len(lengths)
    bar = slot * 0.8 / len(series)
    for i, n in enumerate(lengths):
        x0 = left + i * slot + slot * 0.1
        for j, label in enumerate(series):
            h = (bottom - upper) * shares[label][n] / top
            colour = SERIES_COLOURS[j % len(SERIES_COLOURS)]
            draw.rectangle([x0 + j * bar, bottom - h, x0 + (j + 1) * bar - 1, bottom], fill=colour)
        draw.text((left + i * slot + slot / 2, bottom + 6), str(n), fill=(0, 0, 0), font=FONT, anchor="mt")
    draw.line([(left, bottom), (width - right, bottom)], fill=(0, 0, 0))
    draw.text((width / 2, height - 16), "shortest solution length (player actions)",
              fill=(0, 0, 0), font=FONT, anchor="mt")
    _series_legend(draw, left + 10, list(series))
    return png_bytes(image)


def line_chart(series: dict[str, list[tuple[float, float, float, float]]], x_label: str, y_label: str,
               log_y: bool = False, width: int = 760, height: int = 340) -> bytes:
    """PNG of one line per series with a shaded band, e.g. a mean and its interval.

    ``series`` maps a legend label to points ``(x, y, band_low, band_high)``;
    the y axis runs from 0 to 1, or with ``log_y`` over the powers of ten that
    hold every positive value (zeros are drawn at the bottom edge).
    """
    points = [p for values in series.values() for p in values]
    xs = sorted({p[0] for p in points})
    if log_y:
        positive = [v for p in points for v in p[1:] if v > 0]
        bottom_power = math.floor(math.log10(min(positive))) if positive else -1
        powers = range(bottom_power, 1)
        ticks = [(10.0 ** k, f"{10.0 ** k:g}") for k in powers]
    else:
        ticks = [(k / 5, f"{k / 5:.0%}") for k in range(6)]
    left, right, top, bottom = 70, width - 20, 36, height - 46

    def to_x(x: float) -> float:
        span = (xs[-1] - xs[0]) or 1
        return left + 20 + (x - xs[0]) / span * (right - left - 40)

    def to_y(y: float) -> float:
        if log_y:
            low = math.log10(ticks[0][0])
            share = 0.0 if y <= 0 else (math.log10(y) - low) / -low if low else 1.0
        else:
            share = y
        return bottom - max(0.0, min(1.0, share)) * (bottom - top)

    image = Image.new("RGBA", (width, height), (255, 255, 255, 255))
    draw = ImageDraw.Draw(image)
    for value, label in ticks:
        y = to_y(value)
        draw.line([(left, y), (right, y)], fill=(225, 225, 225, 255))
        draw.text((left - 6, y), label, fill=(0, 0, 0, 255), font=FONT, anchor="rm")
    for x in xs:
        draw.text((to_x(x), bottom + 6), f"{x:g}", fill=(0, 0, 0, 255), font=FONT, anchor="mt")
    draw.line([(left, top), (left, bottom), (right, bottom)], fill=(0, 0, 0, 255))
    draw.text(((left + right) / 2, height - 14), x_label, fill=(0, 0, 0, 255), font=FONT, anchor="mt")
    draw.text((8, 14), y_label, fill=(0, 0, 0, 255), font=FONT, anchor="lm")
    for j, values in enumerate(series.values()):
        colour = SERIES_COLOURS[j % len(SERIES_COLOURS)]
        band = Image.new("RGBA", image.size, (0, 0, 0, 0))
        outline = [(to_x(x), to_y(high)) for x, _, _, high in values]
        outline += [(to_x(x), to_y(low)) for x, _, low, _ in reversed(values)]
        ImageDraw.Draw(band).polygon(outline, fill=(*colour, 60))
        image = Image.alpha_composite(image, band)
    draw = ImageDraw.Draw(image)
    for j, values in enumerate(series.values()):
        colour = (*SERIES_COLOURS[j % len(SERIES_COLOURS)], 255)
        line = [(to_x(x), to_y(y)) for x, y, _, _ in values]
        draw.line(line, fill=colour, width=2)
        for x, y in line:
            draw.ellipse([x - 3, y - 3, x + 3, y + 3], fill=colour)
    _series_legend(draw, max(left + 220, 28 + draw.textlength(y_label, font=FONT)), list(series))
    return png_bytes(np.asarray(image.convert("RGB")))
