"""Compare two methods board by board at every update both have validated.

    python -m sokoban_tools compare --a LOG [LOG ...] --b LOG [LOG ...]
                                    [--method-a NAME --method-b NAME] [--plot FILE] [--json]

At each update: the paired 2x2 table (boards both methods solved, only A,
only B, neither), the difference in success A - B with a paired 95% interval,
a two-sided p-value, and the probability of improvement (the chance that a
run of A beats a run of B on a board, ties half). With one run per method the
interval is Newcombe's paired score interval and the p-value McNemar's exact
test; with several, the table sums all pairs of runs, the intervals come from
a seeded bootstrap over runs and stratified boards, and the p-value is the
exact sign test on the boards whose per-board success rates differ (which is
McNemar's test when each side has one run). See :mod:`sokoban_tools.evaluation.stats`.
``--plot`` draws success against update for both methods, mean over runs,
with its 95% band, as PNG, PDF or SVG by the file's suffix (it needs
matplotlib, the ``plot`` extra).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from sokoban_published import ChecksumError

from ..files import write_atomic
from ..rows import DataError
from ..runtime.boards import BoardsNotFound
from .charts import PlotUnavailable, chart_format, line_chart, require_matplotlib
from .score import table
from .scoring import BoardSet, Group, check_board_set, group_rows, read_logs
from .stats import (Bootstrap, PairedTable, improvement_probability, newcombe_paired_interval,
                    sign_test_p, wilson_interval)

RESAMPLES = 2000
SEED = 0


def pick_method(groups: list[Group], name: str | None, side: str, paths: list[Path]) -> list[Group]:
    """The groups of one method: ``name``, or the only method in the logs."""
    methods = sorted({group.method for group in groups})
    if name is None and len(methods) == 1:
        name = methods[0]
    if name is None or name not in methods:
        logs = ", ".join(map(str, paths))
        asked = f"method {name!r} is not in" if name else "several methods are in"
        raise DataError(f"{asked} {logs} (they hold {', '.join(map(repr, methods))}); "
                        f"choose one with --method-{side} NAME")
    return [group for group in groups if group.method == name]


def compare_update(a: list[Group], b: list[Group], boards: BoardSet, bootstrap: Bootstrap) -> dict:
    """The paired comparison of the runs ``a`` and ``b`` at one update."""
    a_won = np.array([group.won for group in a])
    b_won = np.array([group.won for group in b])
    tables = [PairedTable.of(x, y) for x in a_won for y in b_won]
    counts = {key: sum(getattr(t, key) for t in tables) for key in ("both", "a_only", "b_only", "neither")}
    a_rates, b_rates = a_won.mean(axis=0), b_won.mean(axis=0)
    intervals = bootstrap.intervals(a_won, b_won, boards.strata)
    single = len(a) == 1 and len(b) == 1
    entry = {
        "update": a[0].update,
        "runs_a": [group.run for group in a],
        "runs_b": [group.run for group in b],
        "boards": len(boards.task_ids),
        **counts,
        "success_a": float(a_rates.mean()),
        "ci95_a": list(wilson_interval(int(a_won.sum()), a_won.size) if len(a) == 1 else intervals["success_a"]),
        "success_b": float(b_rates.mean()),
        "ci95_b": list(wilson_interval(int(b_won.sum()), b_won.size) if len(b) == 1 else intervals["success_b"]),
        "difference": float(a_rates.mean() - b_rates.mean()),
        "ci95": list(newcombe_paired_interval(tables[0]) if single else intervals["difference"]),
        "p_value": sign_test_p(int(np.sum(a_rates > b_rates)), int(np.sum(a_rates < b_rates))),
        "probability_of_improvement": float(improvement_probability(a_rates, b_rates)),
        "probability_of_improvement_ci95": list(intervals["probability_of_improvement"]),
    }
    return entry


def compare(a_paths: list[Path], b_paths: list[Path], method_a: str | None = None, method_b: str | None = None,
            validation: Path | None = None, resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """The comparison report of the logs of A and of B."""
    boards = BoardSet.load(validation)
    logs_a, logs_b = read_logs(a_paths), read_logs(b_paths)
    check_board_set(logs_a.rows + logs_b.rows, boards)
    a = pick_method(group_rows(logs_a.rows, boards), method_a, "a", a_paths)
    b = pick_method(group_rows(logs_b.rows, boards), method_b, "b", b_paths)
    bootstrap = Bootstrap(resamples, seed)
    a_updates, b_updates = {g.update for g in a}, {g.update for g in b}
    shared = sorted(a_updates & b_updates)
    return {
        "a": {"method": a[0].method, "logs": [str(p) for p in a_paths]},
        "b": {"method": b[0].method, "logs": [str(p) for p in b_paths]},
        "evaluation_sha256": boards.sha256,
        "training_rows_ignored": logs_a.training_rows + logs_b.training_rows,
        "methods": {
            "one_run_each": "difference: Newcombe's paired score interval (method 10); p_value: McNemar's "
                            "exact test; success: Wilson score interval",
            "several_runs": "2x2 counts summed over all pairs of runs; difference and success: percentile "
                            "interval of a bootstrap over the runs of each method and the boards within "
                            "each stratum (shared by both methods); p_value: exact sign test on the boards "
                            "whose success rates over runs differ",
            "probability_of_improvement": "mean over boards of P(a run of A solves and a run of B does "
                                          "not) + P(tie)/2, with the bootstrap interval",
        },
        "bootstrap": {"resamples": resamples, "seed": seed, "generator": "numpy PCG64",
                      "strata": sorted(set(boards.strata.tolist()))},
        "updates": [compare_update([g for g in a if g.update == u], [g for g in b if g.update == u],
                                   boards, bootstrap) for u in shared],
        "updates_only_a": sorted(a_updates - b_updates),
        "updates_only_b": sorted(b_updates - a_updates),
    }


def _percent(value: float) -> str:
    return f"{value:+.1%}" if value < 0 else f"{value:.1%}"


def render(report: dict) -> str:
    """The readable form of a :func:`compare` report."""
    a, b = report["a"]["method"], report["b"]["method"]
    boot = report["bootstrap"]
    rows = [["update", "runs", f"A {a}", f"B {b}", "both", "A only", "B only", "neither",
             "A - B [95% CI]", "p", "P(A > B) [95% CI]"]]
    for u in report["updates"]:
        rows.append([
            str(u["update"]), f"{len(u['runs_a'])}×{len(u['runs_b'])}",
            f"{u['success_a']:.1%} [{u['ci95_a'][0]:.1%}–{u['ci95_a'][1]:.1%}]",
            f"{u['success_b']:.1%} [{u['ci95_b'][0]:.1%}–{u['ci95_b'][1]:.1%}]",
            str(u["both"]), str(u["a_only"]), str(u["b_only"]), str(u["neither"]),
            f"{_percent(u['difference'])} [{_percent(u['ci95'][0])}, {_percent(u['ci95'][1])}]",
            f"{u['p_value']:.2g}",
            f"{u['probability_of_improvement']:.2f} [{u['probability_of_improvement_ci95'][0]:.2f}, "
            f"{u['probability_of_improvement_ci95'][1]:.2f}]",
        ])
    lines = [f"A = {a}, B = {b}, on the {report['updates'][0]['boards'] if report['updates'] else 0} "
             f"validation boards of evaluation.jsonl {report['evaluation_sha256'][:12]}…; "
             f"{report['training_rows_ignored']:,} training rows ignored.", "", table(rows), ""]
    lines += [f"One run each: {report['methods']['one_run_each']}.",
              f"Several runs: {report['methods']['several_runs']}; {boot['resamples']:,} resamples, "
              f"seed {boot['seed']}.",
              f"P(A > B): {report['methods']['probability_of_improvement']}."]
    for side in ("a", "b"):
        if report[f"updates_only_{side}"]:
            lines.append(f"Not compared, only {side.upper()} validated at update(s) "
                         f"{', '.join(map(str, report[f'updates_only_{side}']))}.")
    return "\n".join(lines)


def learning_curves(report: dict, fmt: str = "png") -> bytes:
    """Success against update for both methods, mean over runs, 95% band, in ``fmt`` (png, pdf, svg)."""
    series = {}
    for side in ("a", "b"):
        points = [(u["update"], u[f"success_{side}"], *u[f"ci95_{side}"]) for u in report["updates"]]
        series[report[side]["method"]] = points
    return line_chart(series, x_label="update", y_label="success on the validation boards",
                      title="mean over runs; band: 95% interval", fmt=fmt)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sokoban_tools compare",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--a", nargs="+", type=Path, required=True, metavar="LOG", help="logs of method A")
    parser.add_argument("--b", nargs="+", type=Path, required=True, metavar="LOG", help="logs of method B")
    parser.add_argument("--method-a", help="the method of A, when its logs hold several")
    parser.add_argument("--method-b", help="the method of B, when its logs hold several")
    parser.add_argument("--plot", type=Path, metavar="FILE",
                        help="write the learning curves to FILE: .png, .pdf or .svg (needs matplotlib)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--evaluation", type=Path, default=None,
                        help="a local copy of fairness/evaluation.jsonl (default: the clone's, or the pinned "
                             "release's from the Hub)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help=f"bootstrap resamples (default {RESAMPLES})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"bootstrap seed (default {SEED})")
    args = parser.parse_args(argv)
    if args.resamples < 1 or args.seed < 0:
        parser.error("--resamples must be positive and --seed non-negative")
    try:
        if args.plot:  # before the work: a missing library or a wrong suffix costs nothing
            plot_format = chart_format(args.plot)
            require_matplotlib("--plot")
    except (ValueError, PlotUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        report = compare(args.a, args.b, args.method_a, args.method_b, args.evaluation, args.resamples, args.seed)
    except (DataError, ChecksumError, BoardsNotFound) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if not report["updates"]:
        print(f"error: A validated at updates {report['updates_only_a']} and B at {report['updates_only_b']}: "
              "no update in common to compare", file=sys.stderr)
        return 1
    if args.plot:
        write_atomic(args.plot, learning_curves(report, plot_format))
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
