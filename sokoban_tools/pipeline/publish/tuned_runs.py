"""The tuned runs on docs/training.md: each method's final runs at the grid point its tuning search
chose, against the runs of its recipe's values, with the seeds counted.

A tuned run is ``train --config K`` on the validation boards, K the method's choice in the
committed search (:mod:`sokoban_tools.training.tuning_search`), with the recipe runs' budget and
schedule; it is committed as ``train --publish`` wrote it under :data:`TUNED_RUNS` and entered
in results/ as ``<method>-tuned-seed<k>``. A method whose choice is its recipe's values has no
tuned runs of its own: its recipe's runs are its tuned runs, and the page says so.
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
from ...training.train import GRID_POINT
from .training_report import ALPHA, scored_runs

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


def tuned_text(repo: Path, search: dict | None, table, report: dict | None) -> str:
    """The section: each method's choice, its tuned runs' last pass against its recipe's (the training
    report's runs, ``report``, scored once there), and the verdict."""
    if search is None:
        return "No tuning search is committed yet, so no method has tuned runs."
    tuned = tuned_logs(repo, search)
    recipe_runs = report["runs"] if report is not None else []
    tuned_runs = scored_runs(repo, tuned) if tuned else []
    kept = [search["methods"][m] for m, point in search["chosen"].items() if point == tuning.recipe_point(BY_NAME[m])]
    found = []
    for method, logs in tuned.items():
        recipe_logs = [run["log"] for run in recipe_runs if run["method"] == method]
        last = compare.compare(logs, recipe_logs, validation=repo / VALIDATION_DATA)["updates"][-1]
        found.append((method, last, (_last_passes(tuned_runs, method), _last_passes(recipe_runs, method))))
    rows = [["Method", "Chosen point", "Tuned: seeds, median (range)", "Recipe's: seeds, median (range)",
             "Tuned - recipe's [95% CI, seeds counted]", "p (Holm)", "Verdict"], ["---"] * 7]
    for (method, last, (ours, theirs)), p in zip(found, holm_adjusted([last["p_value"] for _, last, _ in found])):
        rows.append([search["methods"][method], str(search["chosen"][method]), f"{len(ours)}, {_spread(ours)}",
                     f"{len(theirs)}, {_spread(theirs)}", compare.difference_text(last), f"{p:.2g}",
                     ("tuned better" if last["difference"] > 0 else "recipe's better") if p < ALPHA else "tied"])
    same = (f" {', '.join(kept)}: the search kept the recipe's values, so the runs above are its tuned runs."
            if kept else "")
    return (f"Each method's final runs train the grid point its search chose (`train --config K`), on the validation "
            f"boards, with the recipe runs' budget and schedule; they are published under `{TUNED_RUNS}/` and entered "
            f"in results/ as `<method>{TUNED_ENTRY}<k>` (the card's \"tuned\" rows).{same} Their last pass against the "
            f"recipe's runs', with `compare`'s seed-aware test, Holm-corrected over the methods, at {ALPHA:.0%}:\n\n"
            f"{table(rows)}" if found else same.strip() or "No tuned run is committed yet.")
