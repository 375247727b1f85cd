"""Canonical form of a complete initial state under the 8 symmetries of the square.

Two boards count as the same task when a rotation or reflection maps walls,
targets, box and player of one onto the other; the canonical form is the
smallest XSB text among the 8 images, so equal forms mean equal tasks.
"""

from __future__ import annotations

from functools import lru_cache
from operator import itemgetter

from .board import Board


def _source_cell(turns: int, mirrored: bool, size: int, r: int, c: int) -> tuple[int, int]:
    """The cell of the original that lands on (r, c) of its image after ``turns``
    quarter turns clockwise and, if ``mirrored``, a left-right mirror."""
    if mirrored:
        c = size - 1 - c
    for _ in range(turns):
        r, c = size - 1 - c, r
    return r, c


@lru_cache(maxsize=None)
def _image_pickers(size: int) -> tuple[itemgetter, ...]:
    """One picker per symmetry, in :func:`symmetric_images` order, that reads
    the image's characters straight from the XSB text of a ``size``×``size`` room."""
    line = size + 1  # characters per row, "\n" included
    pickers = []
    for turns in range(4):
        for mirrored in (False, True):
            positions = []
            for r in range(size):
                for c in range(size):
                    source_r, source_c = _source_cell(turns, mirrored, size, r, c)
                    positions.append(source_r * line + source_c)
                positions.append(r * line + size)  # the newline stays a newline
            pickers.append(itemgetter(*positions[:-1]))
    return tuple(pickers)


def symmetric_images(board: Board) -> list[str]:
    """The XSB texts of the board under the 4 rotations and their 4 mirror images."""
    if board.height != board.width:
        raise ValueError(f"symmetries of the square need a square room, not {board.height}x{board.width}")
    text = board.xsb()
    return ["".join(pick(text)) for pick in _image_pickers(board.height)]


def canonical_form(board: Board) -> str:
    """The smallest of the 8 symmetric images: a key for uniqueness."""
    return min(symmetric_images(board))
