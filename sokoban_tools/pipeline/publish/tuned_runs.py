"""The tuned runs on docs/training.md: each method's final runs at the grid point its tuning search
chose, against the runs of its recipe's values, with the seeds counted.

A tuned run is ``train --config K`` on the validation boards, K the method's choice in the
committed search (:mod:`sokoban_tools.training.tuning_search`), with the recipe runs' budget and
schedule; it is committed as ``train --publish`` wrote it under :data:`TUNED_RUNS` and entered
in results/ as ``<method>-tuned-seed<k>``. A method whose choice is its recipe's values has no
tuned runs of its own: its recipe's runs are its tuned runs, and the page says so. The tuned
methods are then compared with each other as the recipe runs are (every pair, seeds counted,
Holm-corrected over the pairs), for the page and the card's ranking line.
"""

from __future__ import annotations

from pathlib import Path
from statistics import median

from ...evaluation import compare
from ...evaluation.stats import holm_adjusted
from ...layout import TRAINING_RUNS, TRAINING_SEEDS, VALIDATION_DATA
from ...records.manifest import manifest_path, read_manifest
from ...records.rows import DataError
from ...training import tuning
from ...training.methods import BY_NAME
from ...training.publish import published_name
from ...training.train import GRID_POINT, METHODS
from .training_report import ALPHA, at_last_pass, beats, compare_pairs, scored_runs, seed_counts, shared_passes

TUNED_RUNS = f"{TRAINING_RUNS}/tuned"
TUNED_ENTRY = "-tuned-seed"  # results/<method>-tuned-seed<k>


def tuned_logs(repo: Path, search: dict) -> dict[str, list[Path]]:
    """Each method's committed tuned runs, checked to train the search's choice."""
    found = {}
    for method, point in search["chosen"].items():
        logs = [log for seed in TRAINING_SEEDS if (log := repo / TUNED_RUNS / published_name(method, seed)).is_file()]
        for log in logs:
            trained = read_manifest(manifest_path(log))["notes"]["learner"].get(GRID_POINT)
            if trained != point:
                raise DataError(f"{manifest_path(log)}: trains grid point {trained}, but the search chose {point} for "
                                f"{method}; train it again with --config {point}, or remove it")
        if logs:
            found[method] = logs
    return found


def _spread(values: list[float]) -> str:
    return f"{median(values):.1%} ({min(values):.1%}–{max(values):.1%})"


def _last_passes(runs: list[dict], method: str) -> list[float]:
    """Each of ``method``'s scored runs' success at its last pass."""
    return [wins / boards for run in runs if run["method"] == method for wins, boards in [run["success"][-1]]]


def tuned_report(repo: Path, search: dict | None, training: dict | None) -> dict | None:
    """The committed tuned runs (scored, every episode replayed), each method's against its
    recipe's runs (the training report's, ``training``, scored once there) and every pair of
    tuned methods; None without a committed search."""
    if search is None:
        return None
    tuned = tuned_logs(repo, search)
    recipe_runs = training["runs"] if training is not None else []
    runs = scored_runs(repo, tuned) if tuned else []
    found = []
    for method, logs in tuned.items():
        recipe_logs = [run["log"] for run in recipe_runs if run["method"] == method]
        both = shared_passes([run for run in [*runs, *recipe_runs] if run["method"] == method])
        last = compare.compare(logs, recipe_logs, validation=repo / VALIDATION_DATA, updates=both[-1:])["updates"][-1]
        found.append({"method": method, "last": last, "tuned": _last_passes(runs, method),
                      "recipe": _last_passes(recipe_runs, method)})
    for entry, adjusted in zip(found, holm_adjusted([entry["last"]["p_value"] for entry in found])):
        entry["p_holm"] = adjusted
    return {"search": search, "runs": runs, "methods": list(tuned), "against_recipe": found,
            "comparisons": compare_pairs(repo, tuned, runs, every_pass=False) if tuned else [],
            "kept": [m for m, point in search["chosen"].items() if point == tuning.recipe_point(BY_NAME[m])]}


def tuned_text(report: dict | None, table) -> str:
    """The section: each method's choice, its tuned runs' last pass against its recipe's, and the
    verdict; then the tuned methods pair by pair."""
    if report is None:
        return "No tuning search is committed yet, so no method has tuned runs."
    search, found = report["search"], report["against_recipe"]
    rows = [["Method", "Chosen point", "Tuned: seeds, median (range)", "Recipe's: seeds, median (range)",
             "Tuned - recipe's [95% CI, seeds counted]", "p (Holm)", "Verdict"], ["---"] * 7]
    for entry in found:
        method, last, p = entry["method"], entry["last"], entry["p_holm"]
        rows.append([search["methods"][method], str(search["chosen"][method]),
                     f"{len(entry['tuned'])}, {_spread(entry['tuned'])}",
                     f"{len(entry['recipe'])}, {_spread(entry['recipe'])}", compare.difference_text(last), f"{p:.2g}",
                     ("tuned better" if last["difference"] > 0 else "recipe's better") if p < ALPHA else "tied"])
    kept = [search["methods"][m] for m in report["kept"]]
    same = (f" {', '.join(kept)}: the search kept the recipe's values, so the runs above are its tuned runs."
            if kept else "")
    if not found:
        return same.strip() or "No tuned run is committed yet."
    return (f"Each method's final runs train the grid point its search chose (`train --config K`), on the validation "
            f"boards, with the recipe runs' budget and schedule; they are published under `{TUNED_RUNS}/` and entered "
            f"in results/ as `<method>{TUNED_ENTRY}<k>` (the card's \"tuned\" rows).{same} Their last pass against the "
            f"recipe's runs', with `compare`'s seed-aware test, Holm-corrected over the methods, at {ALPHA:.0%}"
            f"{_paired_note(found)}:\n\n{table(rows)}{_pairs_text(report, table)}")


def _paired_note(found: list[dict]) -> str:
    """Where tuned and recipe runs of the same seeds were paired by seed, and the smallest p that leaves."""
    paired = [entry for entry in found if (entry["last"]["seeds"] or {}).get("paired_by_seed")]
    if not paired:
        return ""
    smallest = min(entry["last"]["seeds"]["permutation"]["smallest_p"] or 0.0 for entry in paired)
    pairs = "–".join(map(str, sorted({len(entry["last"]["runs_a"]) for entry in paired})))
    return (f" (a tuned run and the recipe's run of one seed start from the same weights, so `compare` pairs them by "
            f"seed, for {', '.join(METHODS[entry['method']] for entry in paired)}: with {pairs} "
            f"pairs the exact test's smallest p is {smallest:.2g}, {smallest * len(found):.2g} after Holm's correction)")


def _pairs_text(report: dict, table) -> str:
    """The tuned methods pair by pair at their last shared pass, as the recipe runs are compared."""
    if not report["comparisons"]:
        return ""
    rows = [["Pair", "Tuned runs", "A - B [95% CI, seeds counted]", "p (runs)", "Holm p", "Verdict"], ["---"] * 6]
    for c in report["comparisons"]:
        last = c["report"]["updates"][-1]
        rows.append([f"{METHODS[c['a']]} vs {METHODS[c['b']]}", f"{len(last['runs_a'])} v {len(last['runs_b'])}",
                     compare.difference_text(last), f"{last['p_value']:.2g}", f"{c['p_holm']:.2g}",
                     "apart" if c["separated"] else "tied"])
    pairs = len(report["comparisons"])
    return (f"\n\nThe tuned methods against each other, every pair at the last pass both hold "
            f"({report['comparisons'][0]['report']['updates'][-1]['update']:,} env steps), with `compare`'s seed-aware "
            f"test, Holm-corrected over the {pairs} pairs; two methods are apart only where the "
            f"corrected p is under {ALPHA:.0%}, and the card's ranking line says which.{_floor(report, pairs)}"
            f"\n\n{table(rows)}")


def _floor(report: dict, pairs: int) -> str:
    """Where too few seeds leave the exact test unable to separate any pair after Holm's correction."""
    smallest = min((c["report"]["updates"][-1]["seeds"] or {}).get("permutation", {}).get("smallest_p") or 0.0
                   for c in report["comparisons"])
    if smallest * pairs < ALPHA:
        return ""
    return (f" With {seed_counts(report)} runs a method the exact test's smallest p is {smallest:.2g}, "
            f"{smallest * pairs:.2g} after Holm's correction over {pairs} pairs: no pair can be apart, whatever the "
            f"runs; more seeds decide.")


def tuned_ranking(report: dict | None) -> str:
    """The card's sentence on the tuned runs, after the recipe runs': which tuned methods the
    seed-aware test separates at their last pass (the others are tied)."""
    if report is None or not report["comparisons"]:
        return ""
    separated = [at_last_pass(c) for c in report["comparisons"] if c["separated"]]
    return f"Tuned runs, {seed_counts(report)} seeds a method: {beats(separated)}."
