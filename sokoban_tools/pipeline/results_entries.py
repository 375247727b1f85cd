"""The project's own entries of the results table: the baselines and the worked example.

    python -m sokoban_tools results            # write results/<entry>/ for each entry below
    python -m sokoban_tools results --check    # replay; fail if a committed entry differs

Each is one validation pass played through the runtime environment and logged by its
episode tally, as any writer logs, with its run manifest and ``entry.json``
(:mod:`sokoban_tools.evaluation.leaderboard`):

- ``optimal``: the stored shortest solution of every board, the optimal baseline (every
  board solved, each return the board's optimal return in ``fairness/baselines.json``);
- ``random-policy``: uniformly random moves 1-4, the worked example's random run 0, whose
  expected success is the exact ``moves_1_4`` baseline of ``fairness/baselines.json``;
- ``path-follower``: the worked example's path follower, run 0 at its last update.

Other entries are folders that submitters add (``leaderboard --add``); this step writes
only its own and leaves every other folder alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from sokoban_published import PUBLISHED_FILES

from ..evaluation.leaderboard import ENTRY, LOG, MANIFEST, entry_document
from ..evaluation.scoring import DEFAULT_VALIDATION
from ..files import json_document
from ..layout import BASELINE_ENTRIES, RESULTS_DIR, VALIDATION_DATA
from ..records.rows import BoardRow
from ..records.tasks import load_validation
from ..rules.board import from_lurd
from ..runtime.env import FairSokobanEnv
from .artifacts import command_line, run_command
from .example_policies import UPDATES, example_manifest, play_pass

COMMAND = "python -m sokoban_tools results"
ENTRY_DATE = "2026-12-02"  # the day these entries were added; regenerating keeps it
SUBMITTER = "sokoban-fairness maintainers"
SCRIPTED = "none (scripted policy)"
OPTIMAL_NOTES = ("The optimal baseline: plays each board's stored shortest solution through the runtime "
                 "environment; no weights, prompt or decoding (null).")


def optimal_pass(boards: list[BoardRow], digest: str) -> tuple[list, dict]:
    """Every board's stored shortest solution played: the records and their manifest."""
    env = FairSokobanEnv(mode="state")
    records = []
    for row in boards:
        env.start(row)
        for action in from_lurd(row.shortest_solution):
            env.play(action)
        records.append(env.tally.record("optimal", "stored-solution", "validation", 0, row.task_id, digest))
    steps = sum(record.actions for record in records)
    return records, example_manifest("optimal", (0,), steps, 0, notes=OPTIMAL_NOTES)


def example_pass(method: str, update: int, boards: list[BoardRow], digest: str) -> tuple[list, dict]:
    """The worked example's run 0 of ``method`` at ``update``: the records and their manifest."""
    records, searches = play_pass(method, 0, update, boards, digest)
    return records, example_manifest(method, (update,), sum(r.actions for r in records), searches)


@dataclass(frozen=True)
class Baseline:
    """One entry this step writes: its folder name, method label, link, note, and how it plays
    (``play(boards, digest)`` gives the records and their manifest)."""

    name: str
    method: str
    link: str
    notes: str
    play: Callable[[list[BoardRow], str], tuple[list, dict]]


OPTIMAL, RANDOM, PATH_FOLLOWER = BASELINE_ENTRIES  # the folder names, which the pipeline's layout keeps
ENTRIES = (
    Baseline(OPTIMAL, "stored shortest solution", "docs/scoring.md#floor-and-ceiling-exact-baselines",
             "every board's stored shortest solution: the optimal baseline", optimal_pass),
    Baseline(RANDOM, "random", "docs/scoring.md#floor-and-ceiling-exact-baselines",
             "uniformly random moves 1-4 (worked example, run seed-0); its exact expected success is "
             "the moves_1_4 baseline of fairness/baselines.json", partial(example_pass, "random", 0)),
    Baseline(PATH_FOLLOWER, "path-follower", "docs/scoring.md#a-worked-example-on-real-episodes",
             f"the worked example's path follower, run seed-0 at update {UPDATES[-1]}",
             partial(example_pass, "path-follower", UPDATES[-1])),
)


def entry_files(baseline: Baseline, boards: list[BoardRow], digest: str, out_dir: Path) -> dict[Path, bytes]:
    """The three files of one entry."""
    records, manifest = baseline.play(boards, digest)
    log = "".join(record.to_line() + "\n" for record in records).encode("utf-8")
    manifest_bytes = json_document(manifest)
    folder = out_dir / baseline.name
    return {folder / LOG: log, folder / MANIFEST: manifest_bytes,
            folder / ENTRY: entry_document(SCRIPTED, baseline.method, SUBMITTER, baseline.link, ENTRY_DATE, log,
                                           manifest_bytes, baseline.notes)}


def build(out_dir: Path = RESULTS_DIR, validation: Path = DEFAULT_VALIDATION) -> dict[Path, bytes]:
    boards = load_validation(validation)  # refused unless it is the published file, whose digest this is
    digest = PUBLISHED_FILES[VALIDATION_DATA]["sha256"]
    files = {}
    for baseline in ENTRIES:
        files.update(entry_files(baseline, boards, digest, out_dir))
    return files


def outputs(out_dir: Path = RESULTS_DIR) -> list[Path]:
    return [out_dir / baseline.name / name for baseline in ENTRIES for name in (LOG, MANIFEST, ENTRY)]


def main(argv: list[str] | None = None) -> int:
    parser = command_line(COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="the results folder (default: results/)")
    args = parser.parse_args(argv)
    return run_command(COMMAND, args.check, outputs(args.out), lambda: build(args.out))


if __name__ == "__main__":
    sys.exit(main())
