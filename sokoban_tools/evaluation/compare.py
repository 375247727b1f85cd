"""Compare two methods board by board at every pass both have validated, or at two chosen passes.

    python -m sokoban_tools compare --a LOG [LOG ...] --b LOG [LOG ...]
                                    [--method-a NAME --method-b NAME] [--plot FILE] [--json]
                                    [--allow-difference KEY ...] [--updates U ...] [--no-manifest]
                                    [--update-a A_PASS --update-b B_PASS] [--step-tolerance FRACTION]

Every episode of both methods is replayed from its recorded moves on its board, once the
settings below are checked and the logs and boards read; the logs are refused, naming the
record and the board, where a replay contradicts a record
(:mod:`sokoban_tools.evaluation.replay`); records without moves are reported as
unverified. The settings: every log has its run manifest beside it
(:mod:`sokoban_tools.records.manifest`), and every controlled setting that
differs between the runs of A and B is listed and refused unless named with
``--allow-difference KEY``, which the report prints as a caveat (the method
itself may differ). Logs without manifests are compared only with
``--no-manifest``, which the report states. Both methods must have validated at
the same passes (or at those chosen with ``--updates``); ``--update-a`` and ``--update-b``
set any pass of A against any pass of B (a short run against a committed one), their
schedules then allowed to differ and said so. Passes labelled in env steps are paired only
when their actual env steps lie within ``--step-tolerance`` of each other
(:mod:`sokoban_tools.evaluation.pass_pairing`), or refused saying why. The runs' cost
entries are shown side by side, apart from success.

At each pass: the paired 2x2 table (boards both methods solved, only A, only B, neither),
the difference in success A - B with a 95% interval and a two-sided p-value, rliable's
interquartile mean (IQM) of each side's runs and its probability of improvement (the chance
that a run of A scores above a run of B, ties half), with stratified-bootstrap intervals.
With one run per method the interval is Newcombe's paired score interval and the p-value
McNemar's exact test. With several runs on a side the runs are the unit of replication: the
interval comes from a seeded hierarchical bootstrap (runs, then boards within each stratum
of each drawn run) and the p-value from a permutation test over runs, paired by seed where
the runs share initial weights; the exact sign test on the boards is kept beside it, as
conditional on the runs; and a line says how many seeds a side would detect a difference of
the observed size with 80% power. Per stratum, the p-values are Holm-corrected across the
strata. See :mod:`sokoban_tools.evaluation.stats`. ``--plot`` draws success against the
pass labels (env steps or updates, as the manifests' ``update_budget.unit`` says) for both
methods, the mean over runs where a side has several, with its 95% band, as PNG, PDF or SVG
by the file's suffix (it needs matplotlib, the ``plot`` extra).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Collection
from pathlib import Path

import numpy as np

from sokoban_published import ChecksumError

from ..files import write_atomic
from ..help_text import Parser
from ..paths import PathError, unwritable
from ..protocol import STRATA
from ..records.rows import DataError
from ..records.boards import BoardsNotFound
from .charts import PlotUnavailable, chart_format, interval_chart, line_chart, require_matplotlib
from ..records.manifest import (BUDGET_UNIT, ENV_STEPS, SETTING, ManifestError, manifest_path, setting_differences,
                                total_costs)
from ..records.run import OpenRun, open_runs
from .baselines import reference_lines
from .inputs import check_rows_against_manifests, not_a_log, read_log, refuse_tuning_logs
from .replay import Verification, verify_rows
from .score import percent_interval, table
from .scoring import BoardSet, Group, check_board_set, group_rows, read_logs
from .pass_pairing import TOLERANCE, budget_unit, measured_steps, pair, pass_steps
from .stats import (SUCCESS_INTERVAL, PairedTable, hierarchical_bootstrap, holm_adjusted, interquartile_mean,
                    newcombe_paired_interval, percentile_interval, permutation_test, probability_of_improvement,
                    seeds_for_power, sign_test_p, smallest_p, stratified_bootstrap, success_interval)

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


# What each interval and p-value code of a report means; each update names the codes it used.
INTERVALS = {
    "exact": f"{SUCCESS_INTERVAL} (one run)",
    "newcombe": "Newcombe's paired score interval, method 10 (one run each)",
    "hierarchical": ("percentile interval of a seeded hierarchical bootstrap: the runs of each side resampled, "
                     "then the boards of each drawn run within each stratum (several runs on a side)"),
    "mcnemar": "McNemar's exact test (one run each)",
    "permutation": ("permutation test over runs, the runs the unit of replication (several runs on a side)"),
}
CONDITIONAL = ("per-board test, conditional on these runs: the exact sign test on the boards whose success "
               "rates over the runs differ, which holds the runs fixed and counts only the boards' chance")
PAIRING_RULE = ("runs of A and B are paired by seed where each run of A has a run of B of the same label that "
                "played the same moves on every board in its pass before training (update 0), as identical initial "
                "weights do (a manifest records run-seeded weights only as such), or whose manifest records the "
                "same initial_weights.revision; otherwise the runs are unpaired")


def initial_plays(rows: list, method: str) -> dict[str, tuple]:
    """Each run's moves on every board (by task ID) in its pass at update 0, where it has one."""
    plays: dict[str, dict] = {}
    for row in rows:
        record = row.record
        if record.method == method and record.update == 0 and record.moves is not None:
            plays.setdefault(record.run, {})[record.task_id] = record.moves
    return {run: tuple(sorted(moves.items())) for run, moves in plays.items()}


def weights_of(group: Group, manifests: dict[str, dict]) -> str | None:
    """The initial weights the manifest of ``group``'s log records by a revision, or ``None``."""
    manifest = manifests.get(str(manifest_path(Path(group.logs[0])))) if group.logs else None
    return manifest["settings"].get("initial_weights.revision") if manifest else None


def seed_pairs(a: list[Group], b: list[Group], plays: tuple[dict, dict], manifests: dict[str, dict]) -> list[Group] | None:
    """B's runs in the order of the runs of A they are paired with (:data:`PAIRING_RULE`), or
    ``None`` where the runs cannot all be paired so."""
    if len(a) < 2 or len(a) != len(b):
        return None
    by_run = {g.run: g for g in b}
    if all(g.run in by_run and g.run in plays[0] and plays[0][g.run] == plays[1].get(g.run) for g in a) \
            and len(set(plays[0][g.run] for g in a)) == len(a):
        return [by_run[g.run] for g in a]
    weights_a = [weights_of(g, manifests) for g in a]
    by_weights = {weights_of(g, manifests): g for g in b}
    if None in weights_a or len(set(weights_a)) != len(a) or set(weights_a) != set(by_weights):
        return None
    return [by_weights[w] for w in weights_a]


def paired(a_won: np.ndarray, b_won: np.ndarray, strata: np.ndarray, resamples: int, seed: int,
           by_seed: bool) -> dict:
    """Success of A and B, their difference with a 95% interval and a p-value, for the outcome
    matrices ``a_won`` (runs of A x boards) and ``b_won`` over the same boards. With several runs
    on a side the runs are the unit of replication (a hierarchical bootstrap and a permutation
    test over runs, paired by seed where ``by_seed``), the per-board sign test is kept as
    conditional on the runs, and rliable's IQM and probability of improvement are given over the
    runs' success, the board set (or the stratum) being rliable's one task."""
    tables = [PairedTable.of(x, y) for x in a_won for y in b_won]
    a_rates, b_rates = a_won.mean(axis=0), b_won.mean(axis=0)
    single = len(a_won) == 1 and len(b_won) == 1
    by_seed = by_seed and len(a_won) == len(b_won) and not single
    boot = hierarchical_bootstrap(a_won, b_won, strata, resamples, seed, by_seed)
    a_scores, b_scores = a_won.mean(axis=1, keepdims=True), b_won.mean(axis=1, keepdims=True)  # one task
    rliable = stratified_bootstrap(a_scores, b_scores, resamples, seed)
    a_runs, b_runs = a_won.sum(axis=1), b_won.sum(axis=1)
    test = permutation_test(a_runs, b_runs, by_seed, seed)
    per_board = sign_test_p(int(np.sum(a_rates > b_rates)), int(np.sum(a_rates < b_rates)))
    codes = {"success_a": "exact" if len(a_won) == 1 else "hierarchical",
             "success_b": "exact" if len(b_won) == 1 else "hierarchical",
             "difference": "newcombe" if single else "hierarchical", "p_value": "mcnemar" if single else "permutation"}
    boards = a_won.shape[1]
    return {
        "boards": boards,
        **{key: sum(getattr(t, key) for t in tables) for key in ("both", "a_only", "b_only", "neither")},
        "success_a": float(a_rates.mean()),
        "ci95_a": list(success_interval(int(a_won.sum()), a_won.size) if len(a_won) == 1 else
                       percentile_interval(boot["success_a"])),
        "success_b": float(b_rates.mean()),
        "ci95_b": list(success_interval(int(b_won.sum()), b_won.size) if len(b_won) == 1 else
                       percentile_interval(boot["success_b"])),
        "difference": float(a_rates.mean() - b_rates.mean()),
        "ci95": list(newcombe_paired_interval(tables[0]) if single else percentile_interval(boot["difference"])),
        "p_value": per_board if single else test.p_value,
        "seeds": None if single else {
            "paired_by_seed": by_seed,
            "permutation": {"p_value": test.p_value, "exact": test.exact, "relabellings": test.relabellings,
                            "smallest_p": smallest_p(len(a_won), len(b_won), by_seed) if test.exact else None},
            "per_board_p_value": per_board,
            "power": seeds_for_power(a_runs / boards, b_runs / boards, by_seed),
        },
        "iqm_a": float(interquartile_mean(a_scores)), "iqm_a_ci95": list(percentile_interval(rliable["iqm_a"])),
        "iqm_b": float(interquartile_mean(b_scores)), "iqm_b_ci95": list(percentile_interval(rliable["iqm_b"])),
        "probability_of_improvement": float(probability_of_improvement(a_scores, b_scores)),
        "probability_of_improvement_ci95": list(percentile_interval(rliable["probability_of_improvement"])),
        "intervals": codes,
    }


def compare_update(a: list[Group], b: list[Group], boards: BoardSet, resamples: int, seed: int, by_seed: bool,
                   passes: dict) -> dict:
    """The comparison of the runs ``a`` and ``b`` at one pass each (``passes``: how they were
    paired), over all boards and within each stratum (the same statistics on the stratum's boards
    alone, the p-values then Holm-corrected across the strata)."""
    a_won = np.array([group.won for group in a])
    b_won = np.array([group.won for group in b])
    by_stratum = {}
    for label in [label for label, _, _ in STRATA if np.any(boards.strata == label)]:
        inside = boards.strata == label
        by_stratum[label] = paired(a_won[:, inside], b_won[:, inside], boards.strata[inside], resamples, seed, by_seed)
    for entry, adjusted in zip(by_stratum.values(), holm_adjusted([e["p_value"] for e in by_stratum.values()])):
        entry["p_value_holm"] = adjusted
    return {"update": a[0].update, **passes, "runs_a": [group.run for group in a],
            "runs_b": [group.run for group in b],
            **paired(a_won, b_won, boards.strata, resamples, seed, by_seed), "by_stratum": by_stratum}


def read_manifests(runs: list[OpenRun]) -> dict[str, dict]:
    """The manifest beside each run's log (path: manifest), refused naming a log without one."""
    manifests = {}
    for run in dict.fromkeys(runs):
        log, path = run.log, run.manifest_path
        if not path.exists() and not path.is_symlink():
            found = not_a_log(log)  # a manifest, a summary given instead of the log has no manifest either
            if found is not None:
                raise DataError(found)
            raise ManifestError(f"{log}: has no run manifest beside it ({path.name}), so its controlled settings "
                                f"are unknown; write one (schema in the card), or compare without the settings "
                                f"check with --no-manifest")
        manifests[str(path)] = run.required_manifest()
    return manifests


# The settings a schedule is: two passes chosen with --update-a/--update-b are compared whatever they are.
SCHEDULE = ("update_budget.total_training_steps", BUDGET_UNIT, "evaluation.frequency", "evaluation.before_training")


def check_settings(a: dict[str, dict], b: dict[str, dict], allowed: Collection[str],
                   chosen: Collection[str] = ()) -> dict:
    """The settings part of the report; :class:`ManifestError` listing every
    difference not ``allowed``, with both sides' values; those in ``chosen`` (the schedule,
    where the user chose the two passes) are allowed, and said so."""
    differences = [{**d, "allowed_by": "--allow-difference" if d["key"] in allowed or d["key"] not in chosen
                    else "--update-a/--update-b"}
                   for d in setting_differences(list(a.values()), list(b.values()))]
    refused = [d for d in differences if d["key"] not in allowed and d["key"] not in chosen]
    if refused:
        lines = [f"controlled setting {d['key']} differs: A {_values(d['a'])}, B {_values(d['b'])}" for d in refused]
        raise ManifestError("; ".join(lines) + f" (manifests of A: {', '.join(a)}; of B: {', '.join(b)}). "
                            f"Match the settings, or name the intended differences with --allow-difference KEY "
                            f"[KEY ...] (here: --allow-difference {' '.join(d['key'] for d in refused)}), which the "
                            f"report prints as caveats")
    return {"checked": True, "manifests_a": list(a), "manifests_b": list(b), "settings": len(SETTING),
            "allowed_differences": differences}


def _values(values: list) -> str:
    return " / ".join(json.dumps(value) for value in values)


def compare(a_paths: list[Path], b_paths: list[Path], method_a: str | None = None, method_b: str | None = None,
            validation: Path | None = None, resamples: int = RESAMPLES, seed: int = SEED,
            manifests: bool = True, allowed: Collection[str] = (), updates: Collection[int] | None = None,
            chosen: tuple[int, int] | None = None, tolerance: float = TOLERANCE) -> dict:
    """The comparison report of the logs of A and of B: their settings checked against each other
    first (unless not ``manifests``), then the numbers at every pass both validated (or at
    ``updates``, or at the two passes ``chosen``, A's and B's), each pair of passes checked to be
    one budget within ``tolerance`` (:mod:`.pass_pairing`)."""
    opened = open_runs([*a_paths, *b_paths])  # each log's manifest read once, for every check below
    runs_a, runs_b = [opened[Path(path)] for path in a_paths], [opened[Path(path)] for path in b_paths]
    refuse_tuning_logs([*runs_a, *runs_b], "compare")
    if manifests:
        manifests_a, manifests_b = read_manifests(runs_a), read_manifests(runs_b)
        settings = check_settings(manifests_a, manifests_b, allowed, SCHEDULE if chosen is not None else ())
    else:
        manifests_a, manifests_b, settings = {}, {}, {"checked": False}
    logs_a, logs_b = read_logs(runs_a), read_logs(runs_b)
    boards = BoardSet.load(validation, [*runs_a, *runs_b])
    check_board_set(logs_a.rows + logs_b.rows, boards)
    a = pick_method(group_rows(logs_a.rows, boards), method_a, "a", a_paths)
    b = pick_method(group_rows(logs_b.rows, boards), method_b, "b", b_paths)
    check_not_itself(a_paths, b_paths, a[0].method, b[0].method)
    if manifests:
        for logs, groups in ((logs_a, a), (logs_b, b)):
            check_rows_against_manifests([row for row in logs.rows if row.record.method == groups[0].method])
    verification = {side: verify_rows([row for row in logs.rows if row.record.method == groups[0].method],
                                      boards.by_id).as_dict()
                    for side, logs, groups in (("a", logs_a, a), ("b", logs_b, b))}
    a_updates, b_updates = {g.update for g in a}, {g.update for g in b}
    labels = (check_chosen(chosen, a_updates, b_updates) if chosen is not None else
              [(u, u) for u in shared_updates(a_updates, b_updates, updates)])
    units = {side: sorted({budget_unit(m) for m in found.values()}) for side, found in
             (("a", manifests_a), ("b", manifests_b))}
    plays = (initial_plays(logs_a.rows, a[0].method), initial_plays(logs_b.rows, b[0].method))
    measured = {**steps_in(a_paths, logs_a, manifests_a), **steps_in(b_paths, logs_b, manifests_b)}
    compared = []
    for label_a, label_b in labels:
        at_a, at_b = [g for g in a if g.update == label_a], [g for g in b if g.update == label_b]
        passes = pair(label_a, label_b, _steps(label_a, at_a, manifests_a, measured) if manifests else None,
                      _steps(label_b, at_b, manifests_b, measured) if manifests else None, tolerance,
                      chosen is not None)
        ordered = seed_pairs(at_a, at_b, plays, {**manifests_a, **manifests_b})
        compared.append(compare_update(at_a, ordered or at_b, boards, resamples, seed, ordered is not None, passes))
    sides = {"a": (a, a_paths), "b": (b, b_paths)}
    return {
        **{side: {"method": groups[0].method, "logs": [str(p) for p in paths],
                  "runs": sorted({g.run for g in groups}), "unit": " / ".join(units[side]) or None}
           for side, (groups, paths) in sides.items()},
        "settings": settings,
        "verification": verification,
        "evaluation_sha256": boards.sha256,
        "training_rows_ignored": logs_a.training_rows + logs_b.training_rows,
        "methods": {
            **INTERVALS,
            "per_board": CONDITIONAL,
            "pairing": PAIRING_RULE,
            "counts": "with several runs, the 2x2 counts sum all pairs of a run of A and a run of B",
            "iqm": ("rliable's interquartile mean of the runs' success (the mean of the middle half of the runs; "
                    "with fewer than four runs, of all), with its stratified bootstrap interval: the runs of each "
                    "side resampled, the board set being its one task"),
            "probability_of_improvement": ("rliable's P(A > B): the share of pairs of a run of A and a run of B in "
                                           "which A's success is higher, ties half, with the same bootstrap's "
                                           "interval"),
            "power": ("seeds a side to detect the observed difference with 80% power at 5%: the normal "
                      "approximation with the observed between-seed variance, and at least what the exact "
                      "permutation test needs to reach 5% at all"),
            "holm": "per-stratum p-values Holm-corrected across the strata",
        },
        "baselines": reference_lines(list(boards.rows)),
        "bootstrap": {"resamples": resamples, "seed": seed, "generator": "numpy PCG64",
                      "strata": sorted(set(boards.strata.tolist()))},
        "updates": compared,
        "costs": costs(manifests_a, len({g.run for g in a}), manifests_b, len({g.run for g in b}))
                 if manifests else None,
    }


def steps_in(paths: list[Path], logs, manifests: dict[str, dict]) -> dict[tuple[str, str, int], int]:
    """The env steps at each pass that the training episodes of logs in env steps record
    (:func:`~.pass_pairing.measured_steps`); the logs are read again only where they hold
    training episodes."""
    if not logs.training_rows or not any(budget_unit(m) == ENV_STEPS for m in manifests.values()):
        return {}
    return {key: steps for path in paths for key, steps in measured_steps(read_log(path)).items()}


def _steps(label: int, groups: list[Group], manifests: dict[str, dict], measured: dict):
    """Where the passes ``groups`` at ``label`` lie in env steps (:func:`~.pass_pairing.pass_steps`)."""
    return pass_steps(label, [(manifests[str(manifest_path(Path(g.logs[0])))], measured.get((g.method, g.run, label)))
                              for g in groups])


def check_chosen(chosen: tuple[int, int], a_updates: set[int], b_updates: set[int]) -> list[tuple[int, int]]:
    """The one pair of passes ``chosen`` (A's, B's), refused naming the passes a side holds."""
    for side, label, found in (("a", chosen[0], a_updates), ("b", chosen[1], b_updates)):
        if label not in found:
            raise DataError(f"--update-{side} {label}: {side.upper()} has no pass there; its passes are at "
                            f"{_labels(found)}")
    return [chosen]


def _labels(updates: set[int]) -> str:
    return ", ".join(f"{u:,}" for u in sorted(updates)) or "none"


def check_not_itself(a_paths: list[Path], b_paths: list[Path], method_a: str, method_b: str) -> None:
    """Refuse a log given as both A and B with the same method: its runs would be compared with
    themselves, every board agreeing, which says nothing about either."""
    if method_a != method_b:
        return
    for a in a_paths:
        for b in b_paths:
            if a.exists() and b.exists() and a.samefile(b):
                raise DataError(f"{b}: is given as both --a and --b with the same method {method_a!r}, so the "
                                f"comparison would be of these runs with themselves (every board agrees); give "
                                f"the other method's logs as --b, or, for two methods in one log, name them "
                                f"with --method-a and --method-b")


def shared_updates(a_updates: set[int], b_updates: set[int], chosen: Collection[int] | None) -> list[int]:
    """The updates to compare: every one, when both methods validated at the same
    updates, else the ``chosen`` ones; refused naming updates not validated by both."""
    asked = (a_updates | b_updates) if chosen is None else set(chosen)
    only_a, only_b = sorted(asked & a_updates - b_updates), sorted(asked & b_updates - a_updates)
    neither = sorted(asked - a_updates - b_updates)
    if only_a or only_b or neither:
        parts = [f"{label} {', '.join(map(str, found))}" for label, found in (
            ("only A validated at update(s)", only_a), ("only B validated at update(s)", only_b),
            ("neither validated at update(s)", neither)) if found]
        both = a_updates & b_updates
        shared = (f"choose {'among ' if chosen is not None else ''}the passes both validated with --updates "
                  f"({_labels(both)}), or " if both else "")
        raise DataError(f"{'; '.join(parts)}: not on both runs' schedules, so not comparable pass by pass; "
                        f"{shared}set one pass of each against the other with --update-a A_PASS --update-b B_PASS "
                        f"(A's passes: {_labels(a_updates)}; B's: {_labels(b_updates)})")
    return sorted(asked)


def costs(manifests_a: dict[str, dict], runs_a: int, manifests_b: dict[str, dict], runs_b: int) -> dict:
    """Each side's cost entries: the total over its manifests and the mean per run."""
    return {side: {name: {**entry, "per_run": entry["total"] / runs} for name, entry in total_costs(m).items()}
            for side, m, runs in (("a", manifests_a, runs_a), ("b", manifests_b, runs_b))}


def _percent(value: float) -> str:
    return f"{value:+.1%}" if value < 0 else f"{value:.1%}"


def _iqm(entry: dict, side: str) -> str:
    low, high = entry[f"iqm_{side}_ci95"]
    return f"{entry[f'iqm_{side}']:.1%} [{low:.1%}, {high:.1%}]"


def difference_text(entry: dict) -> str:
    return f"{_percent(entry['difference'])} [{_percent(entry['ci95'][0])}, {_percent(entry['ci95'][1])}]"


def floor_percent(value: float) -> str:
    """A probability as a percentage, small ones to two significant digits rather than 0.0%."""
    return f"{value:.1%}" if value >= 0.001 or value == 0 else f"{value * 100:.2g}%"


def runs(n: int) -> str:
    return f"{n:,} run" if n == 1 else f"{n:,} runs"


def legend(report: dict) -> list[str]:
    """The intervals and tests the updates shown used, and only those: one line per combination
    of run counts (one run each, several runs, one side only), per stratum as overall."""
    used: dict[tuple, list[str]] = {}
    for u in report["updates"]:
        codes = u["intervals"]
        used.setdefault((len(u["runs_a"]), len(u["runs_b"]), *codes.values()), []).append(pass_label(u))
    methods, lines = report["methods"], []
    for (runs_a, runs_b, success_a, success_b, difference, p_value), updates in used.items():
        where = "" if len(used) == 1 else f"At {', '.join(updates)}: "
        fields = {f"A's success ({runs(runs_a)})": success_a, f"B's success ({runs(runs_b)})": success_b,
                  "A - B": difference, "p": p_value}
        grouped: dict[str, list[str]] = {}
        for field, code in fields.items():
            grouped.setdefault(code, []).append(field)
        parts = [f"{', '.join(names[:-1])}{' and ' if len(names) > 1 else ''}{names[-1]}: {methods[code]}"
                 for code, names in grouped.items()]
        lines.append(where + "; ".join(parts) + ".")
    if any(u["seeds"] for u in report["updates"]):
        boot = report["bootstrap"]
        lines += [f"Bootstrap: {boot['resamples']:,} resamples, seed {boot['seed']}; {methods['counts']}.",
                  f"Pairing: {methods['pairing']}.", f"p per board: {methods['per_board']}.",
                  f"Seeds for 80% power: {methods['power']}."]
    lines += [f"IQM: {methods['iqm']}.", f"P(A > B): {methods['probability_of_improvement']}.",
              f"Per stratum: {methods['holm']} (Holm p)."]
    return lines


def pass_label(u: dict) -> str:
    """The pass (or the two passes) an entry compares, in words."""
    return (f"{u['update_a']:,}" if u["update_a"] == u["update_b"] else f"A {u['update_a']:,} / B {u['update_b']:,}")


def seed_lines(report: dict) -> list[str]:
    """With several runs a side: each pass's seed-aware test, the per-board test beside it, the
    runs' pairing and the seeds a side that 80% power would take."""
    rows = [["pass", "runs", "A - B [95% CI, seeds counted]", "p (runs)", "p per board (given the runs)",
             "seeds a side for 80% power"]]
    for u in report["updates"]:
        seeds = u["seeds"]
        if seeds is None:
            continue
        test, power = seeds["permutation"], seeds["power"]
        kind = (f"exact, {test['relabellings']:,} relabellings, smallest possible {test['smallest_p']:.2g}"
                if test["exact"] else f"{test['relabellings']:,} random relabellings")
        need = ("—" if power is None else
                f"{power['seeds']:,} (normal approximation {power['normal_approximation']:,}; the exact test "
                f"needs {power['exact_test_minimum']})")
        rows.append([pass_label(u), f"{len(u['runs_a'])}×{len(u['runs_b'])} "
                     f"{'paired by seed' if seeds['paired_by_seed'] else 'unpaired'}", difference_text(u),
                     f"{u['p_value']:.2g} ({kind})", f"{seeds['per_board_p_value']:.2g}", need])
    if len(rows) == 1:
        return []
    return ["", "Seeds counted (runs are the unit of replication), with the per-board test beside it:", "",
            table(rows)]


def pass_lines(report: dict) -> list[str]:
    """How the passes were paired, where they are counted in env steps or were chosen."""
    lines = [f"{pass_label(u)}: {u['note']}." for u in report["updates"] if u.get("paired_by") != "label"]
    unit = {report[side]["unit"] for side in "ab"}
    head = (f"Passes are labelled in {unit.pop()}" if len(unit) == 1 and None not in unit else
            "Passes are labelled in A's and B's own units")
    if not lines:
        return []
    tolerance = report["updates"][0]["tolerance"]
    return ["", f"{head}; two passes are paired when their env steps lie within {tolerance:.0%} of each other "
                f"(a pass follows the first update boundary at or past its label):", *lines]


def reference_line(baselines: dict, label: str = "") -> str:
    """The floors and the ceiling of the boards (or of one stratum, ``label``) in one sentence."""
    entry = baselines["by_stratum"][label] if label else baselines["overall"]
    floors = ", ".join(f"{name} {floor_percent(e['success'])}" for name, e in entry.items() if name != "optimal")
    return (f"exact floors within {baselines['horizon_turns']} turns: {floors}; "
            f"ceiling: optimal {entry['optimal']['success']:.0%}")


def render(report: dict) -> str:
    """The readable form of a :func:`compare` report."""
    a, b = report["a"]["method"], report["b"]["method"]
    rows = [["pass", "runs", f"A {a}", f"B {b}", "both", "A only", "B only", "neither",
             "A - B [95% CI]", "p", "IQM A", "IQM B", "P(A > B) [95% CI]"]]
    for u in report["updates"]:
        rows.append([
            pass_label(u), f"{len(u['runs_a'])}×{len(u['runs_b'])}",
            percent_interval(u["success_a"], u["ci95_a"]), percent_interval(u["success_b"], u["ci95_b"]),
            f"{u['both']:,}", f"{u['a_only']:,}", f"{u['b_only']:,}", f"{u['neither']:,}",
            difference_text(u), f"{u['p_value']:.2g}", _iqm(u, "a"), _iqm(u, "b"),
            f"{u['probability_of_improvement']:.2f} [{u['probability_of_improvement_ci95'][0]:.2f}, "
            f"{u['probability_of_improvement_ci95'][1]:.2f}]",
        ])
    baselines = report["baselines"]
    strata_rows = [["pass", "stratum", "boards", f"A {a}", f"B {b}", "A - B [95% CI]", "p", "Holm p",
                    "random floor"]]
    for u in report["updates"]:
        for label, entry in u["by_stratum"].items():
            floor = baselines["by_stratum"][label]
            strata_rows.append([pass_label(u), f"{label} actions", f"{entry['boards']:,}",
                                percent_interval(entry["success_a"], entry["ci95_a"]),
                                percent_interval(entry["success_b"], entry["ci95_b"]),
                                difference_text(entry), f"{entry['p_value']:.2g}", f"{entry['p_value_holm']:.2g}",
                                " / ".join(floor_percent(e["success"]) for name, e in floor.items()
                                           if name != "optimal")])
    floor_names = " / ".join(name for name in baselines["overall"] if name != "optimal")
    lines = [f"A = {a}, B = {b}, on the {report['updates'][0]['boards'] if report['updates'] else 0} "
             f"validation boards of evaluation.jsonl {report['evaluation_sha256'][:12]}…; "
             f"{report['training_rows_ignored']:,} training rows ignored; {reference_line(baselines)}.", "",
             table(rows), *seed_lines(report), *pass_lines(report), "",
             "Per stratum of shortest solution length: the same paired comparison on the stratum's boards "
             f"alone (random floor: {floor_names}, exact; an optimal policy solves 100%).", "",
             table(strata_rows), "", *legend(report)]
    replayed = [f"{side.upper()}: {Verification.of(report['verification'][side]).describe()}" for side in ("a", "b")]
    return "\n".join([settings_lines(report["settings"], a == b), *replayed, "", *lines, *cost_lines(report)])


def settings_lines(settings: dict, same_method: bool = False) -> str:
    """The settings check, in words: passed, passed with caveats, or not made."""
    if not settings["checked"]:
        return ("Settings NOT checked (--no-manifest): the logs come without run manifests, so nothing shows "
                "that the runs matched weights, image processing, horizon, reward, group size, update budget "
                "and decoding.")
    lines = [f"Settings: the {settings['settings']} controlled settings of the run manifests "
             f"({', '.join(Path(path).name for path in settings['manifests_a'] + settings['manifests_b'])}) agree"
             + (" except where allowed below." if settings["allowed_differences"] else
                "; A and B are runs of one method." if same_method else "; only the method differs.")]
    for difference in settings["allowed_differences"]:
        lines.append(f"Caveat: {difference['key']} differs (A {_values(difference['a'])}, B "
                     f"{_values(difference['b'])}), allowed by {difference['allowed_by']}: the difference in "
                     f"success is not the method's alone.")
    return "\n".join(lines)


def quantity(value: float) -> str:
    """A cost as people write it: whole numbers with thousands separators ("1,012,500"), others
    to six significant digits, never in exponent notation."""
    if float(value).is_integer():
        return f"{int(value):,}"
    digits = max(0, 5 - math.floor(math.log10(abs(value))))
    return f"{value:,.{digits}f}".rstrip("0").rstrip(".")


def cost_lines(report: dict) -> list[str]:
    """The cost entries of both methods side by side, apart from success."""
    if report["costs"] is None:
        return []
    a, b = report["costs"]["a"], report["costs"]["b"]
    names = list(dict.fromkeys([*a, *b]))
    if not names:
        return ["", "Costs: the manifests state none."]

    def cell(side: dict, name: str) -> str:
        entry = side.get(name)
        return f"{quantity(entry['total'])} ({quantity(entry['per_run'])} a run)" if entry else "—"

    rows = [["cost", "unit", f"A {report['a']['method']} ({runs(len(report['a']['runs']))})",
             f"B {report['b']['method']} ({runs(len(report['b']['runs']))})"]]
    for name in names:
        units = dict.fromkeys(side[name]["unit"] for side in (a, b) if name in side)
        rows.append([name, " / ".join(units), cell(a, name), cell(b, name)])
    return ["", "Costs from the run manifests, total (mean a run), reported apart from success:", "", table(rows)]


def learning_curves(report: dict, fmt: str = "png") -> bytes:
    """The report as a chart in ``fmt`` (png, pdf, svg), with the boards' exact random floor and
    the optimal ceiling: success against the pass labels (env steps or updates, as the manifests'
    ``update_budget.unit`` says) for both methods, with its 95% band (the mean over runs where a side has several); or,
    at a single pass, where a curve would be two dots, a forest plot of both methods' success
    with its 95% interval over all boards and per stratum."""
    baselines, floor = report["baselines"], "random moves 1–4"
    names = {side: f"{side.upper()} {report[side]['method']} ({runs(len(report[side]['runs']))})" for side in "ab"}
    if len(report["updates"]) == 1:
        (u,) = report["updates"]
        parts = [("all boards", u, baselines["overall"]),
                 *[(f"{label} actions ({entry['boards']})", entry, baselines["by_stratum"][label])
                   for label, entry in u["by_stratum"].items()]]
        series = {names[side]: [(entry[f"success_{side}"], *entry[f"ci95_{side}"]) for _, entry, _ in parts]
                  for side in "ab"}
        references = {f"{floor} (exact floor)": [reference[floor]["success"] for _, _, reference in parts],
                      "optimal (ceiling)": [reference["optimal"]["success"] for _, _, reference in parts]}
        return interval_chart([name for name, _, _ in parts], series, "success on the validation boards",
                              title=(f"{pass_label(u)} env steps" if axis_unit(report) == ENV_STEPS else
                                     f"update {pass_label(u)}") + ": success with its 95% interval",
                              references=references, fmt=fmt)
    series = {names[side]: [(u["update"], u[f"success_{side}"], *u[f"ci95_{side}"]) for u in report["updates"]]
              for side in "ab"}
    references = {f"{floor} (exact floor)": baselines["overall"][floor]["success"],
                  "optimal (ceiling)": baselines["overall"]["optimal"]["success"]}
    return line_chart(series, x_label=axis_unit(report), y_label="success on the validation boards",
                      title=curve_title(report), fmt=fmt, references=references)


def axis_unit(report: dict) -> str:
    """What the pass labels count, from the manifests' units: env steps where both sides' say so, else
    updates (verl-agent's unit, and the one assumed for runs compared without manifests)."""
    return ENV_STEPS if {report[side]["unit"] for side in "ab"} == {ENV_STEPS} else "update"


def curve_title(report: dict) -> str:
    """The chart's title: what each side's line is (a mean only over several runs) and its band."""
    counts = [len(report[side]["runs"]) for side in "ab"]
    if counts[0] == counts[1]:
        line = f"mean over {counts[0]} runs" if counts[0] > 1 else "one run a side"
    else:
        line = "; ".join(f"{side.upper()}: {'mean over ' + str(n) + ' runs' if n > 1 else 'one run'}"
                         for side, n in zip("ab", counts))
    return f"{line}; band: 95% interval"


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m sokoban_tools compare",
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
                        help="a local copy of fairness/evaluation.jsonl (default: where the run manifest beside "
                             "the first log says the run read its boards, else the clone's, else the pinned "
                             "release's from the Hub)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help=f"bootstrap resamples (default {RESAMPLES})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"bootstrap seed (default {SEED})")
    parser.add_argument("--allow-difference", action="extend", nargs="+", default=[], metavar="KEY",
                        type=lambda text: text.replace(",", " ").split(),  # "a, b": two keys, no space in one
                        help="compare although these controlled settings differ (each printed as a caveat); "
                             "several keys at once, space- or comma-separated")
    parser.add_argument("--updates", type=int, nargs="+", metavar="U",
                        help="compare at these updates only (default: every one, which both must have validated)")
    parser.add_argument("--update-a", type=int, metavar="A_PASS",
                        help="set A's pass labelled A_PASS (an update, or nominal env steps) against B's --update-b, "
                             "whatever the two runs' schedules and budgets (stated in the output)")
    parser.add_argument("--update-b", type=int, metavar="B_PASS", help="B's pass, with --update-a")
    parser.add_argument("--step-tolerance", type=float, default=TOLERANCE, metavar="FRACTION",
                        help=f"passes counted in env steps are paired when their actual env steps lie within this "
                             f"share of each other (default {TOLERANCE})")
    parser.add_argument("--no-manifest", action="store_true",
                        help="compare logs without run manifests, unchecked settings (stated in the output)")
    args = parser.parse_args(argv)
    if (args.update_a is None) != (args.update_b is None):
        parser.error("--update-a and --update-b go together: give the pass of each side")
    if args.update_a is not None and args.updates:
        parser.error("--updates compares passes both runs validated; --update-a/--update-b set one pass of each "
                     "against the other: give one or the other")
    if not 0 <= args.step_tolerance < 1:
        parser.error("--step-tolerance is a share of the env steps, from 0 to below 1")
    if args.resamples < 1 or args.seed < 0:
        parser.error("--resamples must be positive and --seed non-negative")
    args.allow_difference = [key for keys in args.allow_difference for key in keys]
    unknown = [key for key in args.allow_difference if key not in SETTING]
    if unknown:
        parser.error(f"--allow-difference {unknown[0]}: not a controlled setting; they are {', '.join(SETTING)}")
    problem = unwritable(args.plot, "--plot") if args.plot else None
    if problem:  # before the work, so a bad --plot does not cost the report
        where = "" if problem.startswith(f"{args.plot}:") else f"{args.plot}: cannot be written, since "
        print(f"error: --plot {where}{problem}", file=sys.stderr)
        return 1
    try:
        if args.plot:  # before the work: a missing library or a wrong suffix costs nothing
            plot_format = chart_format(args.plot)
            require_matplotlib("--plot")
    except (ValueError, PlotUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        report = compare(args.a, args.b, args.method_a, args.method_b, args.evaluation, args.resamples, args.seed,
                         manifests=not args.no_manifest, allowed=args.allow_difference, updates=args.updates,
                         chosen=None if args.update_a is None else (args.update_a, args.update_b),
                         tolerance=args.step_tolerance)
        if args.plot:
            write_atomic(args.plot, learning_curves(report, plot_format))
    except (DataError, ChecksumError, PathError, BoardsNotFound) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # --plot changed since it was checked
        print(f"error: --plot {args.plot}: cannot be written ({err.strerror})", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if args.json else render(report))
    if args.plot:  # on stderr, so the report on stdout stays one document
        chart = "a forest plot of the one update" if len(report["updates"]) == 1 else "the learning curves"
        print(f"wrote {args.plot}: {chart}, {plot_format.upper()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
