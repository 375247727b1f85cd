"""The board-row format of ``fairness/*.jsonl``: writing, reading and refusing bad rows.

One JSON object per line, keys in ``sokoban_published.ROW_KEYS`` order, compact separators,
``\\n`` line ends: each line is exactly what :func:`encode_row` writes for its
board, so a line that re-serialises to other bytes (CRLF, spaces, duplicate
keys, escapes) is refused. Boards are 6x6 rooms walled all round, and seeds
fit in int64 (the column type the loaders give them): the structure is checked by
``sokoban_published.row_problem``, as the loading script checks it, and the
solution is replayed here. Readers refuse anything
else with a :class:`DataError` that names the file, the line and the field and
says how to fix it, so a damaged file never reaches a trainer or a report silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sokoban_published import DataError, row_problem

from ..paths import PathError, read_bounded
from ..rules.board import Board, from_lurd, lurd_of, play, to_lurd
from . import strict_json

REGENERATE_HINT = "regenerate it with the reproduction commands in fairness/README.md"
# Each column's value type as datasets names it, and how deep it nests (a room is a list of rows):
# the card's YAML features, the image tables' datasets features and their Parquet schema all say this.
COLUMN_TYPES = (("task_id", "string", 0), ("seed", "int64", 0), ("room_fixed", "int8", 2), ("room_state", "int8", 2),
                ("xsb", "string", 0), ("shortest_solution", "string", 0), ("shortest_solution_length", "int32", 0))
# Far above any file the commands read (train.jsonl is 1.7 MB): bounds a read of the wrong file.
MAX_FILE_BYTES = 64 << 20


@dataclass(frozen=True)
class BoardRow:
    """One stored task: its id, generation seed, initial board and a shortest solution.

    ``line`` is the row's exact bytes in its file (without the newline), kept so
    that selections can copy rows byte for byte.
    """

    task_id: str
    seed: int
    board: Board
    shortest_solution: str
    line: str

    @property
    def shortest_solution_length(self) -> int:
        return len(self.shortest_solution)


def encode_row(task_id: str, seed: int, board: Board, actions: list[int]) -> str:
    """The canonical JSON line (without newline) of a board and its solution."""
    return _canonical_line(task_id, seed, board, board.xsb(), to_lurd(board, actions))


def _canonical_line(task_id: str, seed: int, board: Board, xsb: str, lurd: str) -> str:
    row = {
        "task_id": task_id,
        "seed": seed,
        "room_fixed": [list(r) for r in board.room_fixed],
        "room_state": [list(r) for r in board.room_state()],
        "xsb": xsb,
        "shortest_solution": lurd,
        "shortest_solution_length": len(lurd),
    }
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False)


def decode_row(line: str) -> BoardRow:
    """Parse and check one line; raises ``ValueError`` saying what is wrong."""
    if line.endswith("\r"):
        raise ValueError("the line ends in a carriage return (CRLF line ends); rows end in \\n alone")
    try:
        row = strict_json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON ({err.msg} at column {err.colno})") from None
    problem = row_problem(row)  # the structure, as the loading script checks it
    if problem:
        raise ValueError(problem)
    board = Board.from_rooms(row["room_fixed"], row["room_state"])
    xsb = board.xsb()
    if xsb != row["xsb"]:
        raise ValueError("xsb does not match room_fixed and room_state")
    if board.is_solved:
        raise ValueError("the board is already solved")
    solution = row["shortest_solution"]
    if not solution:
        raise ValueError("shortest_solution is empty, but the board is not solved")
    actions = from_lurd(solution)
    trace = play(board, actions)  # played once for both checks
    if lurd_of(actions, trace) != solution:
        raise ValueError("shortest_solution does not replay: its pushes and walks disagree with the board")
    if not trace[-1][0].is_solved:
        raise ValueError("shortest_solution does not put the box on the target")
    if row["shortest_solution_length"] != len(solution):
        raise ValueError(
            f"shortest_solution_length is {row['shortest_solution_length']}, "
            f"the solution has {len(solution)} actions"
        )
    canonical = _canonical_line(row["task_id"], row["seed"], board, xsb, solution)
    if line != canonical:
        column = next((i for i, (a, b) in enumerate(zip(line, canonical), start=1) if a != b),
                      min(len(line), len(canonical)) + 1)
        raise ValueError(
            f"not written in the canonical form (compact separators, no spaces or escapes): "
            f"the line differs from its re-serialisation at column {column}"
        )
    return BoardRow(row["task_id"], row["seed"], board, solution, line)


def read_rows(path: Path | str) -> list[BoardRow]:
    """All rows of a board file, each checked; the first bad one raises a
    :class:`DataError` naming the file and line."""
    return read_board_file(path)[1]


def read_regular_file(path: Path | str, fix: str = REGENERATE_HINT) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most :data:`MAX_FILE_BYTES`
    (:func:`paths.read_bounded`, checked before a byte is read: a FIFO, a device
    or a folder neither hangs nor fills the memory); else a :class:`DataError`
    naming it and ending with ``fix``."""
    try:
        return read_bounded(path, MAX_FILE_BYTES)
    except PathError as err:
        raise DataError(f"{err}; {fix}") from None


def read_board_file(path: Path | str) -> tuple[bytes, list[BoardRow]]:
    """A board file's bytes (for its checksum) and its checked rows, from one read."""
    data = read_regular_file(path)
    return data, parse_rows(data, path)


def parse_rows(data: bytes, path: Path | str) -> list[BoardRow]:
    """The rows of ``data``, the contents of the board file ``path`` (named in errors),
    each checked as by :func:`read_rows`."""
    try:
        return list(_checked_rows(data))
    except _LineError as err:
        raise DataError(f"{path}:{err.line_no}: {err.reason}; {REGENERATE_HINT}") from None


class _LineError(Exception):
    """A refused line of bytes whose file :func:`parse_rows` names."""

    def __init__(self, line_no: int, reason: str):
        super().__init__(line_no, reason)
        self.line_no, self.reason = line_no, reason


@lru_cache(maxsize=8)
def _checked_rows(data: bytes) -> tuple[BoardRow, ...]:
    """The checked rows of a board file's bytes. Remembered by content, because a
    process that reproduces or serves the data reads the same three files in every
    step, and the same bytes always give the same rows; a refusal is never remembered."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _LineError(data[: err.start].count(b"\n") + 1, "not UTF-8 text") from None
    if text and not text.endswith("\n"):
        raise _LineError(text.count("\n") + 1, "the last line has no newline, so the file is truncated")
    rows = []
    for line_no, line in enumerate(text.split("\n")[:-1], start=1):
        try:
            rows.append(decode_row(line))
        except ValueError as err:
            raise _LineError(line_no, str(err)) from None
    return tuple(rows)


def pinned_rows(data: bytes) -> list[BoardRow]:
    """The rows of a file whose bytes have just matched a published pin (SHA-256, size
    and rows, see :func:`sokoban_published.check_published_file`): the digest already
    proves every row is one the pipeline checked and verified (``python -m sokoban_tools
    verify``), so they are decoded without re-proving it: no solution replay, no
    canonical re-serialisation."""
    rows = []
    for line in data.decode("utf-8").split("\n")[:-1]:
        row = json.loads(line)
        board = Board.from_rooms(row["room_fixed"], row["room_state"])
        rows.append(BoardRow(row["task_id"], row["seed"], board, row["shortest_solution"], line))
    return rows
