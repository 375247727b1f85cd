"""The training runs' figures for docs/training.md and the card: from the committed logs of ``train``.

Each of the nine runs (:data:`~sokoban_tools.layout.TRAINING_METHODS` x
:data:`~sokoban_tools.layout.TRAINING_SEEDS`) is committed as ``train`` wrote it under
:data:`~sokoban_tools.layout.TRAINING_RUNS` (``<method>-<seed>.jsonl`` and its manifest). This
module scores them (every validation episode replayed), tables each run's costs and success
at every pass, compares the methods pairwise with several runs a side, and draws the learning
curves: the median over seeds with the range of the seeds as the band.
"""

from __future__ import annotations

import re
from pathlib import Path
from statistics import median

from ...evaluation import compare, score
from ...evaluation.charts import line_chart
from ...layout import TRAINING_METHODS, TRAINING_RUNS, TRAINING_SEEDS, VALIDATION_DATA
from ...records.budget import ENV_STEPS_COST
from ...records.manifest import manifest_path, read_manifest
from ...training.train import METHODS, published_name

PAIRS = (("ppo", "grpo"), ("grpo", "gigpo"), ("ppo", "gigpo"))
SEED_ENTRY = re.compile(r"(?P<prefix>.+)-seed(?P<seed>\d+)")  # results/<method>-seed<k>: one entry per seed


def run_logs(repo: Path) -> dict[str, list[Path]]:
    """The committed logs of each method, in seed order (methods without any are left out)."""
    found = {method: [repo / TRAINING_RUNS / published_name(method, seed) for seed in TRAINING_SEEDS] for method in
             TRAINING_METHODS}
    return {method: [log for log in logs if log.is_file()] for method, logs in found.items()
            if any(log.is_file() for log in logs)}


def scored_runs(repo: Path, logs: dict[str, list[Path]]) -> list[dict]:
    """Every run's passes (every validation episode replayed), success at each and costs."""
    scored = score.score([log for method in logs for log in logs[method]], validation=repo / VALIDATION_DATA,
                         verify=True)
    success = {(g["method"], g["run"], g["update"]): (g["wins"], g["boards"]) for g in scored["groups"]}
    runs = []
    for method, paths in logs.items():
        for path in paths:
            manifest = read_manifest(manifest_path(path))
            run = path.stem.rsplit("-", 1)[1]
            points = sorted(u for m, r, u in success if m == METHODS[method] and r == run)
            runs.append({"method": method, "seed": int(run), "log": path, "points": points,
                         "success": [success[(METHODS[method], run, u)] for u in points],
                         "env_steps": manifest["costs"].get(ENV_STEPS_COST, {}).get("value"),
                         "cpu_seconds": manifest["costs"].get("cpu_seconds", {}).get("value"),
                         "budget": manifest["settings"]["update_budget.total_training_steps"]})
    return runs


def training_report(repo: Path) -> dict | None:
    """Every run's passes and costs, the pairwise comparisons and the curves; None with no runs."""
    logs = run_logs(repo)
    if not logs:
        return None
    runs = scored_runs(repo, logs)
    comparisons = []
    for a, b in PAIRS:
        if a in logs and b in logs:
            differ = {d["key"] for d in _differences(logs[a], logs[b])}
            last = max(u for r in runs if r["method"] == a for u in r["points"])
            report = compare.compare(logs[a], logs[b], validation=repo / VALIDATION_DATA, allowed=differ,
                                     updates=[last])
            comparisons.append({"a": a, "b": b, "report": report, "allowed": sorted(differ)})
    return {"runs": runs, "comparisons": comparisons, "methods": list(logs)}


def _differences(a: list[Path], b: list[Path]) -> list[dict]:
    from ...records.manifest import setting_differences

    return setting_differences([read_manifest(manifest_path(p)) for p in a],
                               [read_manifest(manifest_path(p)) for p in b])


def _percent(wins_boards: tuple[int, int]) -> str:
    wins, boards = wins_boards
    return f"{wins / boards:.1%}"


def curves(report: dict) -> dict[str, list[tuple[float, float, float, float]]]:
    """Per method: (env steps, median success over seeds, lowest, highest) at every pass all its runs made."""
    series = {}
    for method in report["methods"]:
        runs = [r for r in report["runs"] if r["method"] == method]
        shared = sorted(set.intersection(*(set(r["points"]) for r in runs)))
        rates = {u: [r["success"][r["points"].index(u)][0] / r["success"][r["points"].index(u)][1] for r in runs]
                 for u in shared}
        name = f"{METHODS[method]} ({len(runs)} seed{'s' if len(runs) > 1 else ''})"
        series[name] = [(u, median(rates[u]), min(rates[u]), max(rates[u])) for u in shared]
    return series


def standing(report: dict, baselines: dict) -> str:
    """One sentence: each method's median at its last pass, against the exact random floor."""
    floor = baselines["splits"]["validation"]["overall"]["moves_1_4"]["success"]["float"]
    last = sorted(((name, points[-1][1]) for name, points in curves(report).items()), key=lambda item: -item[1])
    side = ("all below" if all(v < floor for _, v in last) else
            "all above" if all(v > floor for _, v in last) else "against")
    return (f"At the last pass the medians over seeds are {', '.join(f'{n} {v:.1%}' for n, v in last)}: {side} the "
            f"{floor:.1%} that a policy drawing moves 1–4 uniformly at random reaches (the exact floor).")


def training_picture(report: dict, baselines: dict) -> bytes:
    overall = baselines["splits"]["validation"]["overall"]
    return line_chart(curves(report), x_label="training env steps", y_label="success on the validation boards",
                      title="median over seeds; band: lowest to highest seed",
                      references={"random moves 1–4 (exact floor)": overall["moves_1_4"]["success"]["float"],
                                  "optimal (ceiling)": 1.0})


def training_values(report: dict | None, table, baselines: dict) -> dict[str, object]:
    """The docs page's figures (``table`` is the card's Markdown table maker)."""
    if report is None:
        return {"training_runs_table": "No training run is committed yet.", "training_comparisons": "",
                "training_standing": "",
                "training_hyperparameters": "", "training_budget": "—", "training_cpu": "—",
                "training_card_chart": ""}
    points = sorted({u for r in report["runs"] for u in r["points"]})
    rows = [["Method", "Seed", "Env steps trained", "CPU-s", "Steps/CPU-s", *[f"{u:,}" for u in points]],
            ["---"] * (5 + len(points))]
    for r in report["runs"]:
        cells = {u: _percent(s) for u, s in zip(r["points"], r["success"])}
        rows.append([METHODS[r["method"]], r["seed"], f"{r['env_steps']:,}" if r["env_steps"] is not None else "—",
                     f"{r['cpu_seconds']:,.0f}" if r["cpu_seconds"] is not None else "—",
                     f"{r['env_steps'] / r['cpu_seconds']:,.0f}" if r["env_steps"] and r["cpu_seconds"] else "—",
                     *[cells.get(u, "—") for u in points]])
    comparisons = []
    for c in report["comparisons"]:
        allowed = ", ".join(f"`{k}`" for k in c["allowed"]) or "none"
        comparisons.append(f"### {METHODS[c['a']]} vs {METHODS[c['b']]}\n\n"
                           f"`python -m sokoban_tools compare --a {' '.join(_rel(r) for r in _logs(report, c['a']))} "
                           f"--b {' '.join(_rel(r) for r in _logs(report, c['b']))} --updates "
                           f"{c['report']['updates'][0]['update']}"
                           + (f" --allow-difference {' '.join(c['allowed'])}" if c["allowed"] else "")
                           + f"` (settings the methods own: {allowed}):\n\n"
                           f"```text\n{compare.render(c['report'])}\n```")
    notes = {m: read_manifest(manifest_path(_logs(report, m)[0]))["notes"]["learner"]["hyperparameters"]
             for m in report["methods"]}  # as the runs recorded them
    keys = list(dict.fromkeys(k for values in notes.values() for k in values))
    hyper = [["Hyperparameter", *[METHODS[m] for m in notes]], ["---"] * (1 + len(notes))]
    hyper += [[f"`{k}`", *[str(notes[m].get(k, "—")) for m in notes]] for k in keys]
    budgets = sorted({r["budget"] for r in report["runs"]})
    cpu = [r["cpu_seconds"] for r in report["runs"] if r["cpu_seconds"] is not None]
    budget = ", ".join(f"{b:,}" for b in budgets)
    return {"training_runs_table": table(rows), "training_comparisons": "\n\n".join(comparisons),
            "training_standing": standing(report, baselines),
            "training_hyperparameters": table(hyper), "training_budget": budget,
            "training_cpu": f"{min(cpu):,.0f}–{max(cpu):,.0f}" if cpu else "—",
            "training_card_chart": f"![Training curves, {budget} env steps a run](images/training-curves.png)"}


def _logs(report: dict, method: str) -> list[Path]:
    return [r["log"] for r in report["runs"] if r["method"] == method]


def _rel(path: Path) -> str:
    return f"{TRAINING_RUNS}/{path.name}"


def seed_rows(entries: list[dict]) -> list[tuple[str, list[dict]]]:
    """The results table's rows: an entry alone, or the entries ``<prefix>-seed<k>`` of one
    method collapsed into one row (``(name, entries)``), in the order of their best entry."""
    groups: dict[str, list[dict]] = {}
    order = []
    for entry in entries:
        match = SEED_ENTRY.fullmatch(entry["entry"])
        key = match.group("prefix") if match else entry["entry"]
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(entry)
    return [(key, groups[key]) for key in order]
