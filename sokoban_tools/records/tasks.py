"""Checked loading of the task files for trainers.

A trainer must never play a stale or damaged board file: an old 1,000-row
evaluation file, a cached download from before the 256-board protocol, a
truncated copy. :func:`load_tasks` therefore verifies the file's SHA-256 and
row count with the loading script's own check, :func:`sokoban_published.check_published_file`
(so a trainer and ``load_dataset`` fail with the same message, naming the file,
the expected and actual digest and rows, and the fix) before decoding a single
row, and then decodes exactly the bytes it checked, reading and hashing the file
once; the digest proves the rows, so they are not checked again.
"""

from __future__ import annotations

from pathlib import Path

from sokoban_published import check_published_file

from ..layout import TRAIN_DATA, VALIDATION_DATA
from .rows import BoardRow, pinned_rows


def load_tasks(path: Path | str, name: str) -> list[BoardRow]:
    """The rows of ``path``, a local copy of the published file ``name``
    (e.g. ``"fairness/evaluation.jsonl"``), after checking its SHA-256 and row
    count; raises :class:`sokoban_published.ChecksumError` if it is not the
    published file."""
    return pinned_rows(check_published_file(path, name))


def load_validation(path: Path | str = VALIDATION_DATA) -> list[BoardRow]:
    """The 256 validation boards in stored order, checked (default path relative
    to the repository root)."""
    return load_tasks(path, VALIDATION_DATA)


def load_training(path: Path | str = TRAIN_DATA) -> list[BoardRow]:
    """The 5,000 training boards in stored order, checked."""
    return load_tasks(path, TRAIN_DATA)
