"""Verify every stored board in game images and by exact search, and write the reports.

    python -m sokoban_tools verify            # write fairness/verification.json (the 256
                                              # validation boards) and
                                              # fairness/source-pool-verification.json
                                              # (the 5,000 + 1,000 pool boards)
    python -m sokoban_tools verify --check    # recompute; fail on any difference or failed board

Each board is read with :func:`records.read_board_file` (a row that cannot be read
stops everything with its file and line; that reader already refuses a board
that is not 6x6 and walled, has other than one player, box and target, is
solved, or whose stored solution does not solve it), then checked five ways
(see :data:`CHECKS`), each of which looks at something the reader cannot: the
rendered pictures, the search, and the other boards. The replay renders the start and the position after every
action with ``sokoban_fairness.render_rgb``, the image the environment shows
its model, and reads the pictures back tile by tile. A digest of all rendered
frames goes into the reports, so a changed renderer changes the reports.

Boards are verified in blocks by worker processes (``--workers``); results
come back in file order, so the reports do not depend on the number of workers.
Reports hold no timings, timestamps or absolute paths; the command prints the
timings instead.
"""

from __future__ import annotations

import hashlib
import sys
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sokoban_render import TILE_SIZE, render_rgb

from ...files import sha256_bytes
from ...layout import (DATA_DIR, SOURCE_POOL_FILE, SOURCE_POOL_NAME, SOURCE_POOL_VERIFICATION_FILE, TRAIN_FILE,
                       TRAINING_POOL_NAME, VALIDATION_FILE, VERIFICATION_FILE, published)
from ...protocol import PROTOCOL
from ...records.rows import BoardRow, read_board_file
from ...rules.board import BOX, BOX_ON_TARGET, FLOOR, PLAYER, TARGET, WALL, Board, from_lurd, play
from ...rules.images import replay_frames
from ...rules.solver import shortest_solution
from ...rules.symmetry import canonical_form
from ..artifacts import command_line, json_document, run_command, worker_processes

COMMAND = "python -m sokoban_tools verify"
VALIDATION_NAME = "validation"  # the validation set's name in the reports
# (name in the reports, file) of every board file, in the order uniqueness is checked.
BOARD_FILES = ((TRAINING_POOL_NAME, TRAIN_FILE), (SOURCE_POOL_NAME, SOURCE_POOL_FILE),
               (VALIDATION_NAME, VALIDATION_FILE))

CHECKS = {
    "one_box_target_player": "the rendered start shows exactly one player, one box and one "
                             "target (a player or box standing on the target counts for both)",
    "nonterminal": "the rendered start does not show the box on the target (the row reader "
                   "has already refused a row whose board is solved)",
    "rgb_replay": "rendering the start and the position after each action of the stored "
                  "solution gives length + 1 frames; the start frame reads back as the stored "
                  "room_state; consecutive frames differ in exactly the tiles where the player "
                  "or the box moved; the last frame shows the box-on-target tile on the target "
                  "(the row reader has already refused a solution that does not solve the board)",
    "shortest_path": "an exact breadth-first search over (player, box) positions finds a "
                     "solution, none shorter than the stored one, and of the same length",
    "unique_under_symmetry": "no earlier board in the scope maps onto this one under the 8 "
                             "rotations and reflections of the complete initial state (walls, "
                             "target, box, player), and its task ID is new in the scope",
}
FRAME_DIGEST = (
    "a board's frames_sha256 is the SHA-256 of its frames in order (start first), each the "
    "(96, 96, 3) uint8 array of sokoban_fairness.render_rgb in C order, concatenated; a file's "
    "frames_sha256 is the SHA-256 of its boards' 32-byte frame digests concatenated in file order"
)

# gym-sokoban surface ids of the tiles a picture is made of, with a one-cell
# (room_fixed, room_state) that renders each.
SURFACES = {
    "wall": (0, (WALL, WALL)),
    "floor": (1, (FLOOR, FLOOR)),
    "target": (2, (TARGET, TARGET)),
    "box_on_target": (3, (TARGET, BOX_ON_TARGET)),
    "box": (4, (FLOOR, BOX)),
    "player": (5, (FLOOR, PLAYER)),
    "player_on_target": (6, (TARGET, PLAYER)),
}
PLAYER_SURFACES = {SURFACES["player"][0], SURFACES["player_on_target"][0]}
BOX_SURFACES = {SURFACES["box"][0], SURFACES["box_on_target"][0]}
TARGET_SURFACES = {SURFACES[n][0] for n in ("target", "box_on_target", "player_on_target")}
BOX_ON_TARGET_SURFACE = SURFACES["box_on_target"][0]


class TileReader:
    """Reads a rendered picture back into surface ids, one tile at a time."""

    def __init__(self) -> None:
        self.ids = {
            render_rgb([[fixed]], [[state]]).tobytes(): code
            for code, (fixed, state) in SURFACES.values()
        }

    def read(self, frame: np.ndarray) -> list[list[int | None]]:
        """The surface id of every cell; ``None`` for a tile that is none of the seven."""
        height, width = frame.shape[0] // TILE_SIZE, frame.shape[1] // TILE_SIZE
        data = frame.reshape(height, TILE_SIZE, width, TILE_SIZE, 3).swapaxes(1, 2).tobytes()
        size = TILE_SIZE * TILE_SIZE * 3
        ids = [self.ids.get(data[i:i + size]) for i in range(0, len(data), size)]
        return [ids[r * width:(r + 1) * width] for r in range(height)]


def expected_surfaces(board: Board) -> list[list[int]]:
    """The surface ids gym-sokoban draws for ``board``."""
    surfaces = [list(row) for row in board.room_state()]
    if board.player == board.target:
        surfaces[board.player[0]][board.player[1]] = SURFACES["player_on_target"][0]
    return surfaces


@dataclass
class BoardResult:
    """What verifying one row found."""

    line: int
    task_id: str
    length: int
    bfs_length: int | None
    frames: int
    frames_sha256: str
    failures: list[tuple[str, str]] = field(default_factory=list)

    def entry(self) -> dict:
        return {
            "line": self.line,
            "task_id": self.task_id,
            "shortest_solution_length": self.length,
            "bfs_length": self.bfs_length,
            "frames": self.frames,
            "frames_sha256": self.frames_sha256,
            "failed": [{"check": check, "detail": detail} for check, detail in self.failures],
        }


def replay_failures(board: Board, actions: list[int], frames: np.ndarray,
                    start: list[list[int | None]], reader: TileReader) -> list[str]:
    """Everything wrong with a rendered replay whose first frame reads as ``start``
    (empty when it is right)."""
    problems = []
    boards = [board] + [after for after, _ in play(board, actions)]
    if len(frames) != len(actions) + 1:
        problems.append(f"{len(frames)} frames for {len(actions)} actions")
    if start != expected_surfaces(board):
        problems.append("the start frame does not show the stored room_state")
    height, width = board.height, board.width
    # Which tiles changed between consecutive frames: reduce over a tile's pixel
    # rows, then over its pixels across (two passes over contiguous axes are
    # faster than one over three scattered ones).
    steps = len(frames) - 1
    changed = (frames[1:] != frames[:-1]).reshape(steps, height, TILE_SIZE, width * TILE_SIZE * 3).any(axis=2)
    changed = changed.reshape(steps, height, width, TILE_SIZE * 3).any(axis=3)
    for step, (before, after) in enumerate(zip(boards, boards[1:]), start=1):
        moved = {before.player, after.player} | ({before.box, after.box} if before.box != after.box else set())
        seen = {(int(r), int(c)) for r, c in np.argwhere(changed[step - 1])}
        if seen != moved:
            problems.append(f"action {step} changed tiles {sorted(seen)}, the player and box moved "
                            f"on {sorted(moved)}")
            break
    r, c = board.target
    if reader.read(frames[-1])[r][c] != BOX_ON_TARGET_SURFACE:
        problems.append(f"the last frame does not show the box on the target at {(r, c)}")
    return problems


def verify_board(row: BoardRow, line: int, reader: TileReader) -> tuple[BoardResult, np.ndarray]:
    """Run every per-board check on one row; return the result and the rendered frames.

    Uniqueness depends on the other boards and is added by :func:`check_uniqueness`.
    """
    board = row.board
    actions = from_lurd(row.shortest_solution)
    frames = np.stack(replay_frames(board, actions))
    result = BoardResult(line, row.task_id, len(actions), None, len(frames),
                         hashlib.sha256(frames).hexdigest())
    start = reader.read(frames[0])
    cells = [code for row_codes in start for code in row_codes]
    counts = {name: sum(code in group for code in cells)
              for name, group in (("player", PLAYER_SURFACES), ("box", BOX_SURFACES),
                                  ("target", TARGET_SURFACES))}
    if any(n != 1 for n in counts.values()):
        result.failures.append(("one_box_target_player",
                                ", ".join(f"{n} {name}" for name, n in counts.items()) + " in the start frame"))
    if BOX_ON_TARGET_SURFACE in cells:
        result.failures.append(("nonterminal", "the start frame shows the box on the target"))
    problems = replay_failures(board, actions, frames, start, reader)
    if problems:
        result.failures.append(("rgb_replay", "; ".join(problems)))
    bfs = shortest_solution(board)
    result.bfs_length = None if bfs is None else len(bfs)
    if result.bfs_length != result.length:
        found = "no solution" if bfs is None else f"a solution of {len(bfs)} actions"
        result.failures.append(("shortest_path", f"breadth-first search finds {found}, "
                                                 f"the row stores {result.length}"))
    return result, frames


@dataclass
class FileResult:
    """One board file's verification."""

    name: str
    file: str
    sha256: str
    boards: list[BoardResult]
    frames_sha256: str

    @property
    def frames(self) -> int:
        return sum(b.frames for b in self.boards)

    def totals(self) -> dict:
        return {
            "boards": len(self.boards),
            "passed": sum(not b.failures for b in self.boards),
            "failed": sum(bool(b.failures) for b in self.boards),
            "frames": self.frames,
            "checks": {
                check: {"passed": sum(all(c != check for c, _ in b.failures) for b in self.boards),
                        "failed": sum(any(c == check for c, _ in b.failures) for b in self.boards)}
                for check in CHECKS
            },
        }


@dataclass
class Timings:
    """Seconds spent per phase, and how much was verified (printed, never written)."""

    read: float = 0.0
    replay: float = 0.0
    symmetry: float = 0.0
    boards: int = 0
    frames: int = 0


# Rows per unit of work a worker verifies.
BLOCK_ROWS = 128


def verify_rows(first_line: int, rows: list[BoardRow]) -> list[BoardResult]:
    """Per-board checks of consecutive rows starting at line ``first_line`` (the work the workers share)."""
    reader = TileReader()
    return [verify_board(row, line, reader)[0] for line, row in enumerate(rows, start=first_line)]


def verify_files(data_dir: Path, executor: Executor | None, timings: Timings
                 ) -> list[tuple[list[BoardRow], FileResult]]:
    """Read every board file and run the per-board checks on every row. Each
    file's blocks go to the workers as soon as it is read, so that reading the
    next file overlaps checking this one."""
    started, reading = time.perf_counter(), 0.0
    read = []
    for name, file in BOARD_FILES:
        opened = time.perf_counter()
        data, rows = read_board_file(data_dir / file)
        reading += time.perf_counter() - opened
        blocks = [(start + 1, rows[start:start + BLOCK_ROWS]) for start in range(0, len(rows), BLOCK_ROWS)]
        futures = [executor.submit(verify_rows, *block) for block in blocks] if executor else None
        read.append((name, file, data, rows, blocks, futures))
    verified = []
    for name, file, data, rows, blocks, futures in read:
        done = (future.result() for future in futures) if futures is not None else (
            verify_rows(*block) for block in blocks)
        boards = [result for block in done for result in block]
        digest = hashlib.sha256()
        for result in boards:
            digest.update(bytes.fromhex(result.frames_sha256))
        timings.boards += len(boards)
        timings.frames += sum(result.frames for result in boards)
        verified.append((rows, FileResult(name, published(file), sha256_bytes(data), boards, digest.hexdigest())))
    timings.read += reading
    timings.replay += time.perf_counter() - started - reading
    return verified


def check_uniqueness(scope: list[tuple[list[BoardRow], FileResult]], checked: set[str],
                     timings: Timings) -> dict:
    """Add a uniqueness failure to every board of a file named in ``checked`` whose
    canonical form or task ID occurs earlier in ``scope`` (files in order); return
    counts of the checked boards, their distinct forms and their duplicates."""
    started = time.perf_counter()
    seen_forms: dict[str, tuple[str, str]] = {}
    seen_ids: dict[str, str] = {}
    checked_forms: set[str] = set()
    duplicates = {f"within {result.name}": 0 for _, result in scope if result.name in checked}
    duplicates["across files"] = 0
    boards = 0
    for rows, result in scope:
        for row, board in zip(rows, result.boards):
            here = f"{result.file}:{board.line} ({row.task_id})"
            form = canonical_form(row.board)
            if result.name in checked:
                boards += 1
                checked_forms.add(form)
                problems = []
                if form in seen_forms:
                    owner, where = seen_forms[form]
                    duplicates[f"within {owner}" if owner == result.name else "across files"] += 1
                    problems.append(f"the same board as {where} under a rotation or reflection")
                if row.task_id in seen_ids:
                    problems.append(f"task ID {row.task_id} is already used by {seen_ids[row.task_id]}")
                if problems:
                    board.failures.append(("unique_under_symmetry", "; ".join(problems)))
            seen_forms.setdefault(form, (result.name, here))
            seen_ids.setdefault(row.task_id, here)
    timings.symmetry += time.perf_counter() - started
    return {"boards": boards, "distinct_under_symmetry": len(checked_forms),
            "duplicate_boards": duplicates}


def renderer_entry() -> dict:
    return {
        "function": "sokoban_fairness.render_rgb",
        "tile_size": TILE_SIZE,
        "frame_digest": FRAME_DIGEST,
    }


def validation_report(result: FileResult, uniqueness_scope: str, uniqueness: dict) -> dict:
    return {
        "description": (
            "Verification of every validation board: an RGB replay of its stored shortest "
            "solution and an exact shortest-path search, plus the board checks below. One "
            "entry per board, in file order; 'failed' lists the checks it failed (empty when "
            "it passed). Regenerate or check with the command."
        ),
        "protocol": PROTOCOL,
        "command": COMMAND,
        "file": {"path": result.file, "sha256": result.sha256, "rows": len(result.boards)},
        "renderer": renderer_entry(),
        "checks": CHECKS,
        "uniqueness": {"scope": uniqueness_scope, **uniqueness},
        "totals": result.totals(),
        "frames_sha256": result.frames_sha256,
        "boards": [b.entry() for b in result.boards],
    }


def source_report(results: dict[str, FileResult], uniqueness_scope: str, uniqueness: dict) -> dict:
    files = list(results.values())
    failures = [
        {"file": r.file, **b.entry()} for r in files for b in r.boards if b.failures
    ]
    return {
        "description": (
            "Verification of all 5,000 training and 1,000 source-pool boards with the same "
            "checks as verification.json. To keep the file small it holds per-file totals, "
            "each file's SHA-256 and a digest over all its rendered frames, uniqueness across "
            "both files, and a full entry (as in verification.json) only for boards that "
            "failed. Regenerate or check with the command; it recomputes every board."
        ),
        "command": COMMAND,
        "renderer": renderer_entry(),
        "checks": CHECKS,
        "uniqueness": {"scope": uniqueness_scope, **uniqueness},
        "files": {
            r.name: {"path": r.file, "sha256": r.sha256, "rows": len(r.boards),
                     "totals": r.totals(), "frames_sha256": r.frames_sha256}
            for r in files
        },
        "totals": {
            "boards": sum(len(r.boards) for r in files),
            "passed": sum(r.totals()["passed"] for r in files),
            "failed": len(failures),
            "frames": sum(r.frames for r in files),
        },
        "failures": failures,
    }


def build(data_dir: Path = DATA_DIR, timings: Timings | None = None, workers: int = 1
          ) -> tuple[dict[Path, bytes], list[str]]:
    """Verify all board files in ``data_dir`` with ``workers`` processes (1: this
    process alone); the two reports and one message per failed board."""
    timings = timings if timings is not None else Timings()
    with worker_processes(workers) as executor:
        train, pool, validation = verify_files(data_dir, executor, timings)
    source_uniqueness = check_uniqueness([train, pool], {TRAINING_POOL_NAME, SOURCE_POOL_NAME}, timings)
    # Validation boards are source-pool boards, so their scope is training plus themselves.
    validation_uniqueness = check_uniqueness([train, validation], {VALIDATION_NAME}, timings)
    messages = [
        f"{data_dir / Path(r.file).name}:{b.line}: {b.task_id} failed "
        + "; ".join(f"{check}: {detail}" for check, detail in b.failures)
        for _, r in (train, pool, validation) for b in r.boards if b.failures
    ]
    files = {
        data_dir / VERIFICATION_FILE: json_document(validation_report(
            validation[1], f"within {published(VALIDATION_FILE)} and against {published(TRAIN_FILE)}",
            validation_uniqueness)),
        data_dir / SOURCE_POOL_VERIFICATION_FILE: json_document(source_report(
            {r.name: r for _, r in (train, pool)},
            f"within and across {published(TRAIN_FILE)} and {published(SOURCE_POOL_FILE)}",
            source_uniqueness)),
    }
    return files, messages


def main(argv: list[str] | None = None) -> int:
    parser = command_line(
        COMMAND,
        description="Verify all boards (RGB replay of the stored solution, exact shortest-path "
                    "search, board checks, uniqueness under the 8 symmetries) and write "
                    f"{published(VERIFICATION_FILE)} and {published(SOURCE_POOL_VERIFICATION_FILE)}.",
        data_dir=DATA_DIR,
        workers=True,
    )
    args = parser.parse_args(argv)
    timings = Timings()
    started = time.perf_counter()

    def verified() -> tuple[dict[Path, bytes], tuple[list[str], float]]:
        files, messages = build(args.data_dir, timings, args.workers)
        return files, (messages, time.perf_counter() - started)

    def report(found: tuple[list[str], float]) -> bool:
        messages, elapsed = found
        for message in messages:
            print(message, file=sys.stderr)
        print(f"verified {timings.boards:,} boards ({timings.frames:,} frames rendered) in {elapsed:.2f} s: "
              f"reading {timings.read:.2f} s, replay and search {timings.replay:.2f} s, "
              f"symmetry {timings.symmetry:.2f} s")
        print(f"{len(messages)} board{'s' * (len(messages) != 1)} failed" if messages else "all boards passed")
        return not messages

    outputs = [args.data_dir / VERIFICATION_FILE, args.data_dir / SOURCE_POOL_VERIFICATION_FILE]
    return run_command(COMMAND, args.check, outputs, verified, report)


if __name__ == "__main__":
    sys.exit(main())
