"""Score validation episode logs: success with 95% intervals per pass, stratum and length.

    python -m sokoban_tools score LOG [LOG ...]          # a table per (method, run, update)
    python -m sokoban_tools score LOG [LOG ...] --json   # the same as JSON
    python -m sokoban_tools score LOG [LOG ...] --verify # and replay every episode from its moves
    python -m sokoban_tools score LOG --quick-look       # and a smoke run's pass on the first boards

Each (method, run, update) group must be one complete pass over the published
256 validation boards (see :mod:`sokoban_tools.evaluation.scoring` for what is refused),
except a run's last pass while it is being written, or cut by a run that stopped and
will resume: the complete passes are scored and that one is named, not scored, so a
trainer can watch a run that is validating right now. With ``--quick-look``, a pass on the
first boards only, where the run's manifest declares that quick look (``evaluate --boards``,
TRL's ``--validation-boards``, ``inspect eval --limit``), is scored over the boards it played,
apart from the passes and as no result: ``compare`` and the leaderboard never take one.
Intervals are exact (Clopper-Pearson), as on every surface; training rows are counted and ignored.
A pass whose manifest declares other rewards than the runtime's (VAGEN's) has its mean
return on that scale, which the floors' and ceiling's expected returns are not on: the
table leaves it out and says so (``--json`` keeps it, with ``runtime_rewards`` false).
Beside the passes stand the boards' exact floors, uniformly random policies,
and ceiling, an optimal policy (:mod:`sokoban_tools.evaluation.baselines`). The
passes are checked against the schedule of the run manifest beside each log, and a
resumed or restarted run is reported as such (:mod:`sokoban_tools.evaluation.schedule`).
The boards are read from where the manifest says the run read them, unless
``--evaluation`` names a file. ``--verify`` replays every validation episode from its
recorded moves on its board and refuses the logs, naming the record and the board, where
a replay contradicts a record (:mod:`sokoban_tools.evaluation.replay`); records of an older
writer without moves are counted as unverified.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sokoban_published import ChecksumError

from ..help_text import Parser
from ..paths import PathError
from ..protocol import STRATA
from ..records.rows import DataError
from ..records.boards import BoardsNotFound
from ..records.run import open_runs
from .baselines import reference_lines
from .inputs import check_rows_against_manifests, refuse_tuning_logs
from .replay import Verification, log_rules, verify_rows
from .schedule import check_schedule, describe
from .scoring import BoardSet, check_board_set, passes, read_logs, score_group
from .stats import SUCCESS_INTERVAL



def score(paths: list[Path], validation: Path | None = None, verify: bool = False, quick_look: bool = False) -> dict:
    """Every pass in the logs at ``paths``, scored against ``evaluation``; with ``verify``,
    every episode replayed first; with ``quick_look``, declared quick looks scored apart."""
    opened = open_runs(paths)  # each log's manifest read once, for every check below
    runs = [opened[Path(path)] for path in paths]
    refuse_tuning_logs(runs, "score")
    logs = read_logs(runs)
    check_rows_against_manifests(logs.rows, required=False)
    boards = BoardSet.load(validation, runs)
    check_board_set(logs.rows, boards)
    found = passes(logs.rows, boards, logs.runs, quick_looks=quick_look)
    runtime_rewards = {str(run.log): log_rules(run)[1] for run in runs}

    def scored(group):
        return {**score_group(group, boards), "runtime_rewards": all(runtime_rewards[log] for log in group.logs)}
    verification = verify_rows(logs.rows, boards.by_id).as_dict() if verify else None
    return {
        "logs": [str(path) for path in paths],
        "evaluation_sha256": boards.sha256,
        "interval": SUCCESS_INTERVAL,
        "validation_rows": len(logs.rows),
        "training_rows_ignored": logs.training_rows,
        "groups": [scored(group) for group in found.complete],
        "in_progress": [{"method": p.method, "run": p.run, "update": p.update, "log": p.log, "boards_logged": p.played,
                         "boards": p.boards, "writer": p.holder} for p in found.in_progress],
        "quick_looks": [scored(group) for group in found.quick_looks],
        "baselines": reference_lines(list(boards.rows)),
        "schedule": [entry for run in runs for entry in check_schedule(run, logs.runs[run.log])],
        "verification": verification,
    }


def percent_interval(value: float, interval, separator: str = "–") -> str:
    """``value% [low%<separator>high%]``: a rate with its interval, as every report prints one."""
    low, high = interval
    return f"{value:.1%} [{low:.1%}{separator}{high:.1%}]"


def rate(entry: dict) -> str:
    """``wins/boards  rate% [low–high]``."""
    return f"{entry['wins']}/{entry['boards']} {percent_interval(entry['success'], entry['ci95'])}"


def table(rows: list[list[str]]) -> str:
    """Left-aligned columns, two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def reference_rows(baselines: dict, strata: list[str]) -> list[list[str]]:
    """The floors and the ceiling as rows of the score table."""
    return [[name, "exact", "—", f"{entry['success']:.1%}",
             *[f"{baselines['by_stratum'][s][name]['success']:.1%}" for s in strata],
             f"{entry['expected_return']:.2f}"]
            for name, entry in baselines["overall"].items()]


def in_progress_line(entry: dict) -> str:
    """One line on a pass in progress of a :func:`score` report."""
    now = (f"being written now ({entry['writer']})" if entry["writer"] else
           "cut short: its run stopped while validating (resuming the run plays the pass again)")
    return (f"{entry['method']} {entry['run']} update {entry['update']} ({Path(entry['log']).name}): "
            f"{entry['boards_logged']} of {entry['boards']} boards logged, {now}; not scored")


def render(report: dict) -> str:
    """The readable form of a :func:`score` report."""
    groups, looks = report["groups"], report["quick_looks"]
    lines = [
        f"{len(groups)} validation passes{f' and {len(looks)} quick looks' if looks else ''} "
        f"({report['validation_rows']:,} rows) of evaluation.jsonl {report['evaluation_sha256'][:12]}…; "
        f"{report['training_rows_ignored']:,} training rows ignored. Success: wins/boards, "
        f"rate and {SUCCESS_INTERVAL}.",
    ]
    if groups:
        lines += ["", *passes_lines(report)]
    if looks:
        lines += ["", "Quick looks, no result (each on the first boards in stored order, as its run's manifest "
                      "declares; compare and the leaderboard take complete passes only):", ""]
        lines.append(table([["method", "run", "update", "success", "mean return"]] + [
            [g["method"], g["run"], str(g["update"]), rate(g), f"{g['mean_return']:.2f}" if g["runtime_rewards"] else "—"]
            for g in looks]))
    if report["in_progress"]:
        lines += ["", "Passes in progress (incomplete, each its run's last; the complete passes above are scored):", ""]
        lines += [in_progress_line(entry) for entry in report["in_progress"]]
    lines += ["", "Schedule and history:", ""] + [describe(entry) for entry in report["schedule"]]
    if report["verification"] is not None:
        lines += ["", Verification.of(report["verification"]).describe()]
    return "\n".join(lines)


def passes_lines(report: dict) -> list[str]:
    """The complete passes of a :func:`score` report, per stratum and per length, beside the
    floors and the ceiling."""
    groups, lines = report["groups"], []
    strata = [label for label, _, _ in STRATA if label in groups[0]["by_stratum"]]
    header = ["method", "run", "update", "success", *[f"{label} actions" for label in strata], "mean return"]
    lines.append(table([header] + [
        [g["method"], g["run"], str(g["update"]), rate(g), *[rate(g["by_stratum"][s]) for s in strata],
         f"{g['mean_return']:.2f}" if g["runtime_rewards"] else "—"]
        for g in groups
    ] + reference_rows(report["baselines"], strata)))
    other = [g for g in groups if not g["runtime_rewards"]]
    if other:
        passes_named = ", ".join(f"{g['method']} {g['run']} update {g['update']}" for g in other)
        own = ", ".join(f"{g['mean_return']:.2f}" for g in other)
        lines += ["", f"Mean return left out for {passes_named}: the run manifest declares other rewards than the "
                      f"runtime's (reward.*), so the returns are on another scale than the floors' and the "
                      f"ceiling's; on their own scale: {own} (--json: mean_return)."]
    lines += ["", f"Floors and ceiling (exact, not sampled; within {report['baselines']['horizon_turns']} turns): "
                  f"P(solve) of a policy drawing each answer uniformly from the moves 1–4, or from verl-agent's "
                  f"outputs 0–4 (0, an unparseable answer, spends a turn), and of an optimal one; mean return "
                  f"is expected return (fairness/baselines.json holds them as fractions)."]
    lengths = list(groups[0]["by_length"])
    lines += ["", "Wins/boards per shortest solution length:", ""]
    lines.append(table([["method", "run", "update", *lengths]] + [
        [g["method"], g["run"], str(g["update"]),
         *[f"{g['by_length'][n]['wins']}/{g['by_length'][n]['boards']}" for n in lengths]]
        for g in groups
    ]))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m sokoban_tools score", description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path, metavar="LOG", help="episode logs (JSONL)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--verify", action="store_true",
                        help="replay every validation episode from its recorded moves and refuse a record it "
                             "contradicts")
    parser.add_argument("--quick-look", action="store_true",
                        help="also score a pass on the first boards only where the run's manifest declares that quick "
                             "look (evaluate --boards, TRL's --validation-boards, inspect eval --limit): apart, as no "
                             "result")
    parser.add_argument("--evaluation", type=Path, default=None,
                        help="a local copy of fairness/evaluation.jsonl (default: where the run manifest beside "
                             "the first log says the run read its boards, else the clone's, else the pinned "
                             "release's from the Hub)")
    args = parser.parse_args(argv)
    try:
        report = score(args.logs, args.evaluation, args.verify, args.quick_look)
    except (DataError, ChecksumError, PathError, BoardsNotFound) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
