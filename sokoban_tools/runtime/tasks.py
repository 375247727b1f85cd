"""Checked loading of the task files for trainers.

A trainer must never play a stale or damaged board file: an old 1,000-row
evaluation file, a cached download from before the 256-board protocol, a
truncated copy. :func:`load_tasks` therefore verifies the file's SHA-256 and
row count with the loading script's own :func:`sokoban_fairness.check_published_file`
(so a trainer and ``load_dataset`` fail with the same message, naming the file,
the expected and actual digest and rows, and the fix) before parsing a single
row, and then parses exactly the bytes it checked, reading the file once.
"""

from __future__ import annotations

from pathlib import Path

from sokoban_fairness import check_published_file

from ..data.records import BoardRow, parse_rows
from ..layout import TRAIN_DATA, VALIDATION_DATA


def load_tasks(path: Path | str, name: str) -> list[BoardRow]:
    """The rows of ``path``, a local copy of the published file ``name``
    (e.g. ``"fairness/evaluation.jsonl"``), after checking its SHA-256 and row
    count; raises :class:`sokoban_fairness.ChecksumError` if it is not the
    published file."""
    return parse_rows(check_published_file(path, name), path)


def load_validation(path: Path | str = VALIDATION_DATA) -> list[BoardRow]:
    """The 256 validation boards in stored order, checked (default path relative
    to the repository root)."""
    return load_tasks(path, VALIDATION_DATA)


def load_training(path: Path | str = TRAIN_DATA) -> list[BoardRow]:
    """The 5,000 training boards in stored order, checked."""
    return load_tasks(path, TRAIN_DATA)
