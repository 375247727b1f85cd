"""The card's pictures say what they show: captions under every board, the true tiles in the legend."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from sokoban_render import render_rgb
from sokoban_tools.rules.board import from_lurd
from sokoban_tools.evaluation.figures import CAPTION_HEIGHT, TILE_LEGEND, board_sheet, replay_strip


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def test_replay_strip__one_captioned_frame_per_action(pool_rows):
    row = pool_rows[0]
    strip = pixels(replay_strip(row.board, from_lurd(row.shortest_solution)))
    frames = len(row.shortest_solution) + 1
    assert strip.shape[1] == frames * 96 + (frames + 1) * 8
    band = strip[8 + 96 : 8 + 96 + CAPTION_HEIGHT]
    for frame in range(frames):
        caption = band[:, 8 + frame * 104 : 8 + frame * 104 + 96]
        assert (caption < 128).any(), f"frame {frame} has no caption"


def test_board_sheet__legend_shows_each_tile_as_the_game_draws_it(pool_rows):
    sheet = pixels(board_sheet(pool_rows[:8]))
    legend = sheet[-24:-8]
    found = 0
    for _, fixed, state in TILE_LEGEND:
        tile = render_rgb([[fixed]], [[state]])
        matches = [x for x in range(legend.shape[1] - 15) if np.array_equal(legend[:, x : x + 16], tile)]
        found += bool(matches)
    assert found == len(TILE_LEGEND)
