"""The card's pictures: example boards, length histograms, curves with interval bands.

Drawn with Pillow alone so that regenerating them needs nothing beyond the
project's dependencies; PNG bytes are deterministic (see :mod:`.images`).
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .board import Board
from .images import contact_sheet, png_bytes, render_board, replay_frames
from .records import BoardRow

SERIES_COLOURS = ((66, 120, 190), (230, 140, 40), (120, 120, 120))


def board_sheet(rows: list[BoardRow], columns: int = 8) -> bytes:
    """PNG of the initial game images of ``rows``, laid out ``columns`` to a row."""
    return png_bytes(contact_sheet([render_board(r.board) for r in rows], columns=columns))


def replay_strip(board: Board, actions: list[int]) -> bytes:
    """PNG of a board's start and the position after each action, left to right."""
    frames = replay_frames(board, actions)
    return png_bytes(contact_sheet(frames, columns=len(frames)))


def length_histogram(series: dict[str, dict[str, int]], width: int = 760, height: int = 300) -> bytes:
    """PNG bar chart of the share of boards per shortest-solution length.

    ``series`` maps a legend label to a histogram (length as a string -> boards);
    bars show shares, so splits of different sizes compare directly.
    """
    lengths = sorted({int(k) for hist in series.values() for k in hist})
    shares = {
        label: {n: hist.get(str(n), 0) / sum(hist.values()) for n in lengths}
        for label, hist in series.items()
    }
    top = max(v for s in shares.values() for v in s.values())
    font = ImageFont.load_default()
    image = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    left, right, bottom, upper = 40, 10, height - 40, 30
    slot = (width - left - right) / len(lengths)
    bar = slot * 0.8 / len(series)
    draw.line([(left, bottom), (width - right, bottom)], fill=(0, 0, 0))
    for i, n in enumerate(lengths):
        x0 = left + i * slot + slot * 0.1
        for j, label in enumerate(series):
            h = (bottom - upper) * shares[label][n] / top
            colour = SERIES_COLOURS[j % len(SERIES_COLOURS)]
            draw.rectangle([x0 + j * bar, bottom - h, x0 + (j + 1) * bar - 1, bottom], fill=colour)
        draw.text((left + i * slot + slot / 2, bottom + 6), str(n), fill=(0, 0, 0), font=font, anchor="mt")
    draw.text((width / 2, height - 14), "shortest solution length (player actions)",
              fill=(0, 0, 0), font=font, anchor="mt")
    draw.text((6, bottom), "0%", fill=(0, 0, 0), font=font, anchor="lb")
    draw.text((6, upper), f"{top:.0%}", fill=(0, 0, 0), font=font, anchor="lt")
    x = left + 10
    for j, label in enumerate(series):
        draw.rectangle([x, 8, x + 12, 20], fill=SERIES_COLOURS[j % len(SERIES_COLOURS)])
        draw.text((x + 18, 14), label, fill=(0, 0, 0), font=font, anchor="lm")
        x += 28 + draw.textlength(label, font=font)
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
    font = ImageFont.load_default()
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
        draw.text((left - 6, y), label, fill=(0, 0, 0, 255), font=font, anchor="rm")
    for x in xs:
        draw.text((to_x(x), bottom + 6), f"{x:g}", fill=(0, 0, 0, 255), font=font, anchor="mt")
    draw.line([(left, top), (left, bottom), (right, bottom)], fill=(0, 0, 0, 255))
    draw.text(((left + right) / 2, height - 14), x_label, fill=(0, 0, 0, 255), font=font, anchor="mt")
    draw.text((8, 14), y_label, fill=(0, 0, 0, 255), font=font, anchor="lm")
    for j, values in enumerate(series.values()):
        colour = SERIES_COLOURS[j % len(SERIES_COLOURS)]
        band = Image.new("RGBA", image.size, (0, 0, 0, 0))
        outline = [(to_x(x), to_y(high)) for x, _, _, high in values]
        outline += [(to_x(x), to_y(low)) for x, _, low, _ in reversed(values)]
        ImageDraw.Draw(band).polygon(outline, fill=(*colour, 60))
        image = Image.alpha_composite(image, band)
    draw = ImageDraw.Draw(image)
    x_legend = max(left + 220, 28 + draw.textlength(y_label, font=font))
    for j, (label, values) in enumerate(series.items()):
        colour = (*SERIES_COLOURS[j % len(SERIES_COLOURS)], 255)
        line = [(to_x(x), to_y(y)) for x, y, _, _ in values]
        draw.line(line, fill=colour, width=2)
        for x, y in line:
            draw.ellipse([x - 3, y - 3, x + 3, y + 3], fill=colour)
        draw.rectangle([x_legend, 8, x_legend + 12, 20], fill=colour)
        draw.text((x_legend + 18, 14), label, fill=(0, 0, 0, 255), font=font, anchor="lm")
        x_legend += 28 + draw.textlength(label, font=font)
    return png_bytes(np.asarray(image.convert("RGB")))
