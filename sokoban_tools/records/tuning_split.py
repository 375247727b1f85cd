"""The tuning split: 256 of the 5,000 training boards held out, on which tuning runs validate.

Hyperparameters chosen on the 256 validation boards would be fitted to the boards that
rank the methods. So a tuning run (``train --tuning``) trains on the other 4,744 training
boards and validates on these 256, and never plays a validation board. They are chosen by
the rule of sokoban-eval-256-v1 (:mod:`.stratified`: strata of shortest solution length,
Hamilton's quotas, SHA-256 ranking) with its own salt, :data:`TUNING_PROTOCOL`, from the
training pool alone; ``python -m sokoban_tools tuning`` writes the selection to
``fairness/tuning-256.selection.json`` for anyone to recompute, and the data files are
unchanged. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..files import is_sha256, sha256_bytes
from ..layout import TRAIN_DATA, TUNING_SELECTION_FILE, published
from .rows import BoardRow
from .stratified import Selection, select

TUNING_PROTOCOL = "sokoban-tuning-256-v1"  # the salt of the ranking hash, and the split's name
TUNING_SIZE = 256
TUNING_SELECTION = published(TUNING_SELECTION_FILE)  # "fairness/tuning-256.selection.json"


@dataclass(frozen=True)
class TuningSplit:
    """The training pool cut in two: ``held_out`` (the tuning boards) and ``rest`` (what a tuning
    run trains on), both in stored order; ``sha256``: of the held-out boards' lines, one per line,
    as a file of them would hold them (a tuning run's validation records name it)."""

    selection: Selection
    held_out: tuple[BoardRow, ...]
    rest: tuple[BoardRow, ...]
    sha256: str


def boards_text(rows: Sequence[BoardRow]) -> bytes:
    """The stored lines of ``rows``, each with its newline, as a board file holds them."""
    return "".join(row.line + "\n" for row in rows).encode("utf-8")


def tuning_split(rows: Sequence[BoardRow], path: Path | str = TRAIN_DATA) -> TuningSplit:
    """The tuning split of the training pool ``rows`` (read from ``path``, named in errors)."""
    selection = select(list(rows), Path(path), TUNING_SIZE, TUNING_PROTOCOL)
    held = {row.task_id for row in selection.selected}
    return TuningSplit(selection, tuple(selection.selected), tuple(row for row in rows if row.task_id not in held),
                       sha256_bytes(boards_text(selection.selected)))


def tuning_record(sha256: str) -> dict:
    """What a tuning run's manifest records of the split (its ``tuning`` entry), ``sha256`` being
    the tuning boards' (:attr:`TuningSplit.sha256`)."""
    return {"protocol": TUNING_PROTOCOL, "selection": TUNING_SELECTION,
            "validation_boards": TUNING_SIZE, "validation_boards_sha256": sha256,
            "note": "trained on the training boards outside the tuning split and validated on the tuning split, "
                    "never on the validation boards: a tuning run, not a result"}


def is_tuning_record(entry) -> bool:
    """Whether ``entry`` has the shape :func:`tuning_record` gives a manifest's ``tuning`` entry, of this split."""
    return (isinstance(entry, dict) and set(entry) == set(tuning_record("")) and entry["protocol"] == TUNING_PROTOCOL
            and is_sha256(entry["validation_boards_sha256"]))
