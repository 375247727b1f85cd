"""Build the two frozen board pools and their generation audit from seeds.

    python -m sokoban_tools pools            # write fairness/train.jsonl, evaluation-pool-1000.jsonl,
                                             # source-pool-summary.json
    python -m sokoban_tools pools --check    # regenerate in memory, compare byte for byte

A candidate seed is accepted when the generator returns a room for it, the
room is not already solved, it is solvable, and its canonical form (under the
8 symmetries of the square) has not been accepted before, in this pool or in
the training pool, which is built first.

Worker processes generate and canonicalise blocks of seeds ahead of the main
process, which accepts candidates in seed order, so the files do not depend on
the number of workers. Only new forms are solved: a duplicate's accepted twin
was solvable, and so is every rotation or reflection of it.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from tqdm import tqdm

from ...files import sha256_bytes
from ...layout import (DATA_DIR, GENERATION_AUDIT_FILE, SOURCE_POOL_FILE, SOURCE_POOL_NAME, TRAIN_FILE,
                       TRAINING_POOL_NAME, published)
from ...protocol import STRATA, histogram, stratum_of
from ...records.rows import encode_row
from ...rules.board import Board, Cell, Grid
from ...rules.solver import shortest_solution
from ...rules.symmetry import canonical_form
from ..artifacts import command_line, json_document, run_command, worker_processes
from .generator import GeneratorConfig, Rejection, generate

COMMAND = "python -m sokoban_tools pools"
GENERATOR_NAME = ("verl-agent Sokoban generate_room, reimplemented seed for seed in "
                  "sokoban_tools/pipeline/generate/generator.py")


@dataclass(frozen=True)
class PoolSpec:
    """Where a pool's candidates start, how its task IDs look and how many it keeps."""

    name: str
    file: str
    id_prefix: str
    id_digits: int
    first_seed: int
    size: int

    def task_id(self, index: int) -> str:
        return f"{self.id_prefix}{index:0{self.id_digits}d}"


TRAINING_POOL = PoolSpec(TRAINING_POOL_NAME, TRAIN_FILE, "train-", 5, 0, 5000)
SOURCE_POOL = PoolSpec(SOURCE_POOL_NAME, SOURCE_POOL_FILE, "eval-", 4, 65_536, 1000)
POOLS = (TRAINING_POOL, SOURCE_POOL)


@dataclass
class PoolScan:
    """What scanning one pool's seeds found."""

    spec: PoolSpec
    lines: list[str] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    last_seed: int = -1
    rejections: dict[str, list[int]] = field(default_factory=dict)
    duplicates: Counter = field(default_factory=Counter)

    @property
    def candidates(self) -> int:
        return self.last_seed - self.spec.first_seed + 1

    def data(self) -> bytes:
        return "".join(line + "\n" for line in self.lines).encode("utf-8")


# Seeds per unit of work a worker generates; small enough that the few blocks
# generated past a pool's last accepted seed cost little.
BLOCK_SEEDS = 256


class Candidate(NamedTuple):
    """One seed's room and canonical form, or why it has none. A plain tuple, so
    that sending blocks of them between processes costs little."""

    seed: int
    form: str | None = None
    position: tuple[Grid, Cell, Cell] | None = None  # room_fixed, player, box
    reason: str | None = None

    @property
    def board(self) -> Board:
        return Board(*self.position)


def examine(seeds: range, config: GeneratorConfig) -> list[Candidate]:
    """Generate and canonicalise a block of seeds (the work the workers share)."""
    found = []
    for seed in seeds:
        board = generate(seed, config)
        if isinstance(board, Rejection):
            found.append(Candidate(seed, reason=board.reason))
        elif board.is_solved:
            found.append(Candidate(seed, reason="already solved"))
        else:
            found.append(Candidate(seed, canonical_form(board), (board.room_fixed, board.player, board.box)))
    return found


def candidate_stream(first_seed: int, config: GeneratorConfig, executor: Executor | None = None,
                     blocks_ahead: int = 0) -> Iterator[Candidate]:
    """Candidates from ``first_seed`` upward, in seed order; with an ``executor``,
    its workers generate up to ``blocks_ahead`` blocks ahead of the consumer."""
    starts = itertools.count(first_seed, BLOCK_SEEDS)
    if executor is None:
        for start in starts:
            yield from examine(range(start, start + BLOCK_SEEDS), config)
        return
    pending: deque = deque()
    try:
        while True:
            while len(pending) < blocks_ahead:
                start = next(starts)
                pending.append(executor.submit(examine, range(start, start + BLOCK_SEEDS), config))
            yield from pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


def scan_pool(spec: PoolSpec, accepted_forms: dict[str, str], stream: Iterator[Candidate]) -> PoolScan:
    """Accept candidates from ``stream`` (seeds upward from ``spec.first_seed``)
    until ``spec.size`` boards are accepted.

    ``accepted_forms`` maps canonical forms to the pool that accepted them; it
    is shared between pools and updated in place.
    """
    scan = PoolScan(spec)
    with tqdm(total=spec.size, desc=f"{spec.name} boards", unit="board", file=sys.stderr,
              disable=None, leave=False) as progress:
        for candidate in stream:
            scan.last_seed = candidate.seed
            if candidate.reason is not None:
                scan.rejections.setdefault(candidate.reason, []).append(candidate.seed)
                continue
            owner = accepted_forms.get(candidate.form)
            if owner is not None:
                scan.duplicates["within_pool" if owner == spec.name else "against_other_pool"] += 1
                continue
            board = candidate.board
            actions = shortest_solution(board)
            if actions is None:
                scan.rejections.setdefault("unsolvable", []).append(candidate.seed)
                continue
            accepted_forms[candidate.form] = spec.name
            scan.lines.append(encode_row(spec.task_id(len(scan.lines)), candidate.seed, board, actions))
            scan.lengths.append(len(actions))
            progress.update(1)
            if len(scan.lines) == spec.size:
                break
    return scan


def audit(scans: list[PoolScan], config: GeneratorConfig) -> dict:
    """The generation audit: how every pool was made and what its file holds."""
    pools = {}
    for scan in scans:
        data = scan.data()
        entry = {
            "file": published(scan.spec.file),
            "task_ids": f"{scan.spec.task_id(0)} .. {scan.spec.task_id(scan.spec.size - 1)}",
            "seeds_scanned": {"first": scan.spec.first_seed, "last": scan.last_seed},
            "candidates": scan.candidates,
            "rejected": {
                reason: {"count": len(seeds), "seeds": seeds}
                for reason, seeds in sorted(scan.rejections.items())
            },
            "duplicates": {
                "within_pool": scan.duplicates["within_pool"],
                "against_other_pool": scan.duplicates["against_other_pool"],
            },
            "accepted": len(scan.lines),
            "shortest_solution_length": {
                "min": min(scan.lengths),
                "max": max(scan.lengths),
                "histogram": histogram(scan.lengths),
            },
            "rows": len(scan.lines),
            "sha256": sha256_bytes(data),
        }
        if scan.spec is SOURCE_POOL:
            strata = Counter(stratum_of(n) for n in scan.lengths)
            entry["strata"] = {
                label: {"shortest_solution_length": [low, high], "boards": strata[label]}
                for label, low, high in STRATA
            }
        pools[scan.spec.name] = entry
    return {
        "generator": {
            "name": GENERATOR_NAME,
            "parameters": config.as_dict(),
            "seeding": "random.Random(seed) and numpy.random.RandomState(seed), the streams of "
                       "random.seed(seed) and numpy.random.seed(seed)",
        },
        "acceptance_rule": (
            "Seeds are scanned upward from the pool's first seed. A candidate is accepted when "
            "the generator returns a room, the room is not already solved, an exact breadth-first "
            "search solves it, and its complete initial state (walls, targets, box, player) is new "
            "under the 8 rotations and reflections of the square, within its pool and against the "
            "pools built before it (train first, then source_pool). Accepted boards are numbered "
            "in acceptance order."
        ),
        "pools": pools,
    }


def outputs(data_dir: Path) -> list[Path]:
    """The files :func:`build` produces in ``data_dir``, in order."""
    return [data_dir / spec.file for spec in POOLS] + [data_dir / GENERATION_AUDIT_FILE]


def build(data_dir: Path = DATA_DIR, config: GeneratorConfig = GeneratorConfig(), workers: int = 1
          ) -> tuple[list[PoolScan], dict[Path, bytes]]:
    """Scan both pools with ``workers`` generating processes (1: this process
    alone); return the scans and the files they produce in ``data_dir``."""
    accepted_forms: dict[str, str] = {}
    scans = []
    with worker_processes(workers) as executor:
        for spec in POOLS:
            stream = candidate_stream(spec.first_seed, config, executor, blocks_ahead=2 * workers)
            scans.append(scan_pool(spec, accepted_forms, stream))
            stream.close()
    data = [scan.data() for scan in scans] + [json_document(audit(scans, config))]
    return scans, dict(zip(outputs(data_dir), data))


def main(argv: list[str] | None = None) -> int:
    parser = command_line(
        COMMAND,
        "Regenerate the 5,000-board training pool, the 1,000-board source pool and their "
        f"generation audit ({published(GENERATION_AUDIT_FILE)}) from seeds.",
        data_dir=DATA_DIR,
        workers=True,
        data_files=True,
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()

    def scanned() -> tuple[dict[Path, bytes], list[PoolScan]]:
        scans, files = build(args.data_dir, workers=args.workers)
        return files, scans

    def report(scans: list[PoolScan]) -> bool:
        for scan in scans:
            rejected = sum(len(s) for s in scan.rejections.values())
            print(f"{scan.spec.name}: {len(scan.lines)} boards from {scan.candidates} seeds "
                  f"({scan.spec.first_seed}..{scan.last_seed}); {rejected} rejected, "
                  f"{sum(scan.duplicates.values())} duplicates")
        print(f"took {time.perf_counter() - started:.1f} s")
        return True

    return run_command(COMMAND, args.check, outputs(args.data_dir), scanned, report, args.new_release)


if __name__ == "__main__":
    sys.exit(main())
