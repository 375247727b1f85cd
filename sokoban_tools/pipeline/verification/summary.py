"""Current split counts and statistics: fairness/summary.json.

    python -m sokoban_tools summary            # write fairness/summary.json
    python -m sokoban_tools summary --check    # recompute; fail on any difference

For the training and validation splits of the default configuration, and for
the archived 1,000-board source pool: rows, the file's SHA-256, task-ID range,
the shortest-solution-length histogram, minimum, maximum and mean, and the
counts per stratum of sokoban-eval-256-v1. Every figure is computed from the
files themselves, each read with :func:`records.read_board_file`.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from ...files import sha256_bytes
from ...layout import DATA_DIR, SOURCE_POOL_FILE, SUMMARY_FILE, TRAIN_FILE, VALIDATION_FILE, published
from ...protocol import PROTOCOL, STRATA, histogram, stratum_of
from ...records.rows import REGENERATE_HINT, DataError, read_board_file
from ..artifacts import command_line, json_document, run_command

COMMAND = "python -m sokoban_tools summary"
MEAN_DECIMALS = 3


def file_statistics(data_dir: Path, file: str) -> dict:
    """The statistics of one board file."""
    path = data_dir / file
    data, rows = read_board_file(path)
    if not rows:
        raise DataError(f"{path}: holds no boards; {REGENERATE_HINT}")
    lengths = [row.shortest_solution_length for row in rows]
    strata = Counter(stratum_of(n) for n in lengths)
    return {
        "file": published(file),
        "rows": len(rows),
        "sha256": sha256_bytes(data),
        "task_ids": {"first": rows[0].task_id, "last": rows[-1].task_id},
        "shortest_solution_length": {
            "min": min(lengths),
            "max": max(lengths),
            "mean": round(sum(lengths) / len(lengths), MEAN_DECIMALS),
            "sum": sum(lengths),
            "histogram": histogram(lengths),
        },
        "strata": {label: strata[label] for label, _, _ in STRATA},
        "outside_strata": sum(n for label, n in strata.items() if label is None),
    }


def build(data_dir: Path = DATA_DIR) -> dict[Path, bytes]:
    """The summary of the board files in ``data_dir``."""
    document = {
        "description": (
            "Split counts and statistics of the current files, computed from the files. "
            "Lengths are shortest solution lengths in player actions (walks and pushes). "
            f"mean is sum / rows rounded to {MEAN_DECIMALS} decimals; strata are those of "
            f"{PROTOCOL}. The default fairness configuration has the train and validation "
            "splits; source_pool_1000 is an archive configuration, the pool the validation "
            "boards were selected from."
        ),
        "command": COMMAND,
        "protocol": PROTOCOL,
        "strata": {label: [low, high] for label, low, high in STRATA},
        "splits": {
            "train": file_statistics(data_dir, TRAIN_FILE),
            "validation": file_statistics(data_dir, VALIDATION_FILE),
        },
        "archive": {
            "source_pool_1000": file_statistics(data_dir, SOURCE_POOL_FILE),
        },
    }
    return {data_dir / SUMMARY_FILE: json_document(document)}


def main(argv: list[str] | None = None) -> int:
    parser = command_line(
        COMMAND,
        description=f"Write {published(SUMMARY_FILE)}: rows, SHA-256, length statistics and "
                    "stratum counts of the train and validation splits and the archived pool.",
        data_dir=DATA_DIR,
    )
    args = parser.parse_args(argv)
    return run_command(COMMAND, args.check, [args.data_dir / SUMMARY_FILE], lambda: build(args.data_dir))


if __name__ == "__main__":
    sys.exit(main())
