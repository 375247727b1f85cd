"""The tuning search's record, written from its runs' logs: every run's tuning-split success,
each run checked to have played no board it must not.

    python -m sokoban_tools tuning-search --logs DIR

The search (:mod:`.tuning`) is every method x every grid point x :data:`~.tuning.SEEDS`, each
a tuning run of :data:`~.tuning.STEPS` env steps, logged as ``sweep`` logs it in a folder per
grid point, ``DIR/c<K>/<method>-<seed>.jsonl``:

    python -m sokoban_tools sweep --method M --seeds 0-1 --tuning --config K --logs DIR/cK \\
        --steps 500000 --eval-every 100000

This command reads every log whole and refuses the search, naming the log (and the line) and
the fix, if a run is missing or unfinished, is not the tuning run of its method, grid point,
seed and budget, or played a board it must not: a validation board anywhere, a tuning board
in training, or a pass that is not the tuning split's 256 boards once each. Only then does it
write :data:`SEARCH`: each run's passes (label, wins), its env steps and CPU-seconds, and the
SHA-256 of its log and manifest (the logs, 10-20 MB a run, stay with whoever ran them), and
each method's configuration chosen by :data:`~.tuning.CHOICE_RULE` (:func:`chosen`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import mean

from ..files import json_document, sha256_file, write_atomic
from ..help_text import Parser
from ..layout import ROOT
from ..paths import PathError
from ..records.budget import ENV_STEPS_COST, StepSchedule
from ..records.episodes import iter_episodes
from ..records.run import OpenRun
from ..records.rows import DataError
from ..records.tasks import load_training, load_validation
from ..records.tuning_split import TUNING_SELECTION, tuning_split
from . import tuning
from .methods import BY_NAME, LABELS
from .train import GRID_POINT

SEARCH = "examples/tuning/search.json"
FORMAT = "sokoban-fairness tuning search 1"


@dataclass(frozen=True)
class Search:
    """What a search covers: methods, grid points, seeds, and each run's budget and schedule."""

    methods: tuple[str, ...] = tuple(LABELS)
    points: tuple[int, ...] = tuple(range(len(tuning.GRID)))
    seeds: tuple[int, ...] = tuning.SEEDS
    steps: int = tuning.STEPS
    every: int = tuning.EVAL_EVERY

    def command(self, method: str, point: int, logs: Path) -> str:
        seeds = ",".join(map(str, self.seeds))
        return (f"python -m sokoban_tools sweep --method {method} --seeds {seeds} --tuning --config {point} "
                f"--logs {logs / f'c{point}'} --steps {self.steps} --eval-every {self.every}")


def log_path(logs: Path, method: str, point: int, seed: int) -> Path:
    return logs / f"c{point}" / f"{method}-{seed}.jsonl"


class Boards:
    """The task ids a tuning run may play where: the tuning split's and the validation boards'."""

    def __init__(self):
        split = tuning_split(load_training())
        self.held_out = {row.task_id for row in split.held_out}
        self.validation = {row.task_id for row in load_validation()}


def check_run(log: Path, method: str, point: int, seed: int, search: Search, boards: Boards) -> dict:
    """The record of one finished tuning run, read whole; refused (naming the log, the line and the fix)
    when it is not the run it should be or played a board it must not."""
    again = f"train it again: {search.command(method, point, log.parent.parent)}"
    if not log.is_file():
        raise DataError(f"{log}: missing: the search needs every run; {again}")
    opened = OpenRun(log)
    manifest = opened.required_manifest()
    learner = (manifest.get("notes") or {}).get("learner") or {}
    settings = manifest["settings"]
    expected = {"method": LABELS[method], GRID_POINT: point, "steps": search.steps, "every": search.every}
    found = {"method": manifest["method"], GRID_POINT: learner.get(GRID_POINT),
             "steps": settings.get("update_budget.total_training_steps"), "every": settings.get("evaluation.frequency")}
    wrong = [f"{key} {found[key]!r} (the search's: {expected[key]!r})" for key in expected if found[key] != expected[key]]
    if manifest.get("tuning") is None:
        wrong.append("not a tuning run (no --tuning)")
    if wrong:
        raise DataError(f"{log}: not the tuning run of {method} at grid point {point}: {'; '.join(wrong)}; {again}")
    if ENV_STEPS_COST not in manifest["costs"]:
        raise DataError(f"{log}: the run has not reached its budget; run the same sweep again to finish it")
    fix = f"the log was altered or is not a tuning run's; {again}"
    passes: dict[int, Counter] = {}
    wins: Counter = Counter()
    for number, record in enumerate(iter_episodes(log, fix), start=1):
        where = f"{log}:{number}"
        if record.task_id in boards.validation:
            raise DataError(f"{where}: {record.phase} episode on validation board {record.task_id}: a tuning run never "
                            f"plays the 256 validation boards; {fix}")
        held = record.task_id in boards.held_out
        if record.phase == "training" and held:
            raise DataError(f"{where}: training episode on tuning board {record.task_id}, which a tuning run only "
                            f"validates on; {fix}")
        if record.phase == "validation":
            if not held:
                raise DataError(f"{where}: validation episode on {record.task_id}, not a tuning board; {fix}")
            passes.setdefault(record.update, Counter())[record.task_id] += 1
            wins[record.update] += bool(record.won)
    for label, played in passes.items():
        if set(played) != boards.held_out or set(played.values()) != {1}:
            raise DataError(f"{log}: the pass at {label:,} played {len(played)} of the {len(boards.held_out)} tuning "
                            f"boards ({sum(played.values())} episodes), not each once; {fix}")
    labels = sorted(passes)
    schedule = StepSchedule(search.steps, search.every).points()
    if labels != schedule:
        raise DataError(f"{log}: passes at {labels}, the schedule's are {schedule}; {fix}")
    costs = manifest["costs"]
    return {"method": method, "config": point, "seed": seed, "passes": [[label, wins[label]] for label in labels],
            "env_steps": costs[ENV_STEPS_COST]["value"], "cpu_seconds": round(costs["cpu_seconds"]["value"], 1),
            "log_sha256": sha256_file(log), "manifest_sha256": sha256_file(opened.manifest_path)}


def last_passes(runs: list[dict]) -> dict[tuple[str, int], list[int]]:
    """Each (method, grid point)'s wins at its runs' last pass, a seed each."""
    last: dict[tuple[str, int], list[int]] = {}
    for run in runs:
        last.setdefault((run["method"], run["config"]), []).append(run["passes"][-1][1])
    return last


def chosen(runs: list[dict], methods) -> dict[str, int]:
    """Each method's grid point by :data:`~.tuning.CHOICE_RULE`: the highest mean over seeds of the
    last pass's wins, ties to the lower point."""
    last = last_passes(runs)
    return {method: min((k for m, k in last if m == method), key=lambda k: (-mean(last[method, k]), k))
            for method in methods}


def build(logs: Path, search: Search = Search()) -> dict:
    """The search's record from the logs under ``logs``, every run checked first."""
    boards = Boards()
    runs = [check_run(log_path(logs, m, k, s), m, k, s, search, boards)
            for m in search.methods for k in search.points for s in search.seeds]
    return {"format": FORMAT, "grid": [tuning.GRID[k].values() for k in search.points],
            "methods": {m: BY_NAME[m].LABEL for m in search.methods}, "seeds": list(search.seeds),
            "steps": search.steps, "every": search.every, "split": TUNING_SELECTION,
            "choice_rule": tuning.CHOICE_RULE, "runs": runs, "chosen": chosen(runs, search.methods)}


def read_search(path: Path = ROOT / SEARCH) -> dict | None:
    """The committed search's record, or ``None`` where none is committed yet."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m sokoban_tools tuning-search", description=__doc__.split("\n\n")[0],
                    formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--logs", type=Path, required=True, help="the search's folder: DIR/c<K>/<method>-<seed>.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / SEARCH, help=f"where to write the record (default {SEARCH})")
    args = parser.parse_args(argv)
    try:
        record = build(args.logs)
    except (DataError, PathError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out, json_document(record))
    picks = ", ".join(f"{record['methods'][m]} point {k}" for m, k in record["chosen"].items())
    print(f"wrote {args.out}: {len(record['runs'])} tuning runs checked; chosen: {picks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
