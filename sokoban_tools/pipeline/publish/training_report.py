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
from ...evaluation.charts import line_chart, short_count
from ...evaluation.stats import holm_adjusted
from ...records.budget import ENV_STEPS_COST
from ...layout import TRAINING_METHODS, TRAINING_RUNS, TRAINING_SEEDS, VALIDATION_DATA
from ...records.budget import ENV_STEPS_COST
from ...records.manifest import manifest_path, read_manifest
from ...training.publish import published_name
from ...training.train import METHODS

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
            shared = sorted(set.intersection(*(set(r["points"]) for r in runs if r["method"] in (a, b))))
            report = compare.compare(logs[a], logs[b], validation=repo / VALIDATION_DATA, allowed=differ,
                                     updates=shared)
            comparisons.append({"a": a, "b": b, "report": report, "allowed": sorted(differ)})
    verdicts = holm_adjusted([c["report"]["updates"][-1]["p_value"] for c in comparisons])
    for comparison, adjusted in zip(comparisons, verdicts):
        comparison["p_holm"] = adjusted
        comparison["separated"] = adjusted < ALPHA
    return {"runs": runs, "comparisons": comparisons, "methods": list(logs)}


ALPHA = 0.05  # the card ranks two methods apart only where the seed-aware test separates them at this level
RISING = 0.01  # a method still rising gained more than this (one point) over its last three passes


def rising(report: dict) -> dict[str, float]:
    """Per method: the gain in mean success over its seeds from the first of its last three shared
    passes to the last (still rising where it exceeds :data:`RISING`)."""
    gains = {}
    for method in report["methods"]:
        points = mean_curve(report, method)
        gains[method] = points[-1][1] - points[-3][1] if len(points) >= 3 else float("nan")
    return gains


def mean_curve(report: dict, method: str) -> list[tuple[int, float]]:
    """(pass label, mean success over the method's seeds) at every pass all its runs made."""
    runs = [r for r in report["runs"] if r["method"] == method]
    shared = sorted(set.intersection(*(set(r["points"]) for r in runs)))
    return [(u, sum(_rate(r, u) for r in runs) / len(runs)) for u in shared]


def _rate(run: dict, point: int) -> float:
    wins, boards = run["success"][run["points"].index(point)]
    return wins / boards


def area(run: dict) -> float:
    """The area under a run's curve of success against env steps (trapezoids between its passes),
    over the env steps it spans: its mean success over training, 0 to 1."""
    xs, ys = run["points"], [_rate(run, u) for u in run["points"]]
    if len(xs) < 2:
        return ys[0]
    return sum((x1 - x0) * (y0 + y1) / 2 for x0, x1, y0, y1 in zip(xs, xs[1:], ys, ys[1:])) / (xs[-1] - xs[0])


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
                "training_ranking": "", "training_budgets": "", "training_pairing": "",
                "training_alpha": f"{ALPHA:.0%}", "compare_resamples": f"{compare.RESAMPLES:,}",
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
    comparisons = [comparison_section(report, c, table) for c in report["comparisons"]]
    notes = {m: read_manifest(manifest_path(_logs(report, m)[0]))["notes"]["learner"]["hyperparameters"]
             for m in report["methods"]}  # as the runs recorded them
    keys = list(dict.fromkeys(k for values in notes.values() for k in values))
    hyper = [["Hyperparameter", *[METHODS[m] for m in notes]], ["---"] * (1 + len(notes))]
    hyper += [[f"`{k}`", *[str(notes[m].get(k, "—")) for m in notes]] for k in keys]
    budgets = sorted({r["budget"] for r in report["runs"]})
    cpu = [r["cpu_seconds"] for r in report["runs"] if r["cpu_seconds"] is not None]
    budget = ", ".join(f"{b:,}" for b in budgets)
    return {"training_runs_table": table(rows), "training_comparisons": "\n\n".join(comparisons),
            "training_ranking": ranking(report), "training_budgets": budgets_text(report, table),
            "training_pairing": pairing_text(report), "training_alpha": f"{ALPHA:.0%}",
            "compare_resamples": f"{compare.RESAMPLES:,}",
            "training_standing": standing(report, baselines),
            "training_hyperparameters": table(hyper), "training_budget": budget,
            "training_cpu": f"{min(cpu):,.0f}–{max(cpu):,.0f}" if cpu else "—",
            "training_card_chart": "![Training curves](images/training-curves.png)"}


def comparison_section(report: dict, c: dict, table) -> str:
    """One pair's section of docs/results.md: ``compare``'s report at the last shared pass, as the
    command prints it, then the seed-aware difference at every pass both methods made."""
    full = c["report"]
    last = full["updates"][-1]
    allowed = ", ".join(f"`{k}`" for k in c["allowed"]) or "none"
    command = (f"python -m sokoban_tools compare --a {' '.join(_rel(r) for r in _logs(report, c['a']))} "
               f"--b {' '.join(_rel(r) for r in _logs(report, c['b']))} --updates {last['update']}"
               + (f" --allow-difference {' '.join(c['allowed'])}" if c["allowed"] else ""))
    rows = [["Env steps", METHODS[c["a"]], METHODS[c["b"]], "A - B [95% CI, seeds counted]", "p (runs)",
             "p per board (given the runs)", "P(A > B)"], ["---"] * 7]
    for u in full["updates"]:
        seeds = u["seeds"] or {}
        rows.append([f"{u['update']:,}", f"{u['success_a']:.1%}", f"{u['success_b']:.1%}",
                     compare.difference_text(u), f"{u['p_value']:.2g}", f"{seeds.get('per_board_p_value', u['p_value']):.2g}",
                     f"{u['probability_of_improvement']:.2f}"])
    return (f"### {METHODS[c['a']]} vs {METHODS[c['b']]}\n\n{verdict(c)}\n\n"
            f"`{command}` (settings the methods own: {allowed}):\n\n"
            f"```text\n{compare.render({**full, 'updates': [last]})}\n```\n\n"
            f"At every pass both made (matched env steps, each pass paired as `compare` pairs it):\n\n"
            f"{table(rows)}")


def verdict(c: dict) -> str:
    """Whether the seed-aware test separates the pair at the last pass, in one sentence."""
    last = c["report"]["updates"][-1]
    a, b = METHODS[c["a"]], METHODS[c["b"]]
    low, high = last["ci95"]
    numbers = (f"{a} - {b} {last['difference']:+.1%} [{low:+.1%}, {high:+.1%}], permutation p "
               f"{last['p_value']:.2g} over {len(last['runs_a'])} v {len(last['runs_b'])} runs, "
               f"{c['p_holm']:.2g} Holm-corrected over the {len(PAIRS)} pairs")
    if c["separated"]:
        return f"**Apart** at {last['update']:,} env steps: {numbers}."
    seeds = last["seeds"] or {}
    smallest = (seeds.get("permutation") or {}).get("smallest_p")
    floor = (f"; with {len(last['runs_a'])} runs a side the exact test's smallest p is {smallest:.2g}, so it "
             f"cannot reach {ALPHA:.0%}" if smallest is not None and smallest >= ALPHA else "")
    power = seeds.get("power")
    need = (f"; about {power['seeds']} seeds a side would detect a difference of this size with 80% power"
            if power else "")
    return f"**Tied** at {last['update']:,} env steps (not separated at {ALPHA:.0%}): {numbers}{floor}{need}."


def pairing_text(report: dict) -> str:
    """Whether the committed runs were compared paired by seed, in one sentence."""
    paired = {c["report"]["updates"][-1]["seeds"]["paired_by_seed"] for c in report["comparisons"]
              if c["report"]["updates"][-1]["seeds"]}
    if paired == {True}:
        return ("The committed runs of one seed play the same moves before training whatever the method, so "
                "[Results](results.md#trained-methods-compared) compares them paired.")
    if paired == {False}:
        return "The committed runs do not pair so, and [Results](results.md#trained-methods-compared) compares them unpaired."
    return ""


def ranking(report: dict) -> str:
    """The card's line under the results table, short for the card's size: which trained methods
    the seed-aware test separates at the budget (the others are tied) and which still rise; the
    intervals and tests are the results page's."""
    if not report["comparisons"]:
        return ""
    budget = short_count(report["comparisons"][0]["report"]["updates"][-1]["update"])
    apart = [f"{METHODS[c['a']]} {'>' if c['report']['updates'][-1]['difference'] > 0 else '<'} {METHODS[c['b']]}"
             for c in report["comparisons"] if c["separated"]]
    relations = (f"counting seeds, {', '.join(apart)}; the others tied" if apart else
                 "no two trained methods differ counting seeds")
    up = [METHODS[m] for m, gain in rising(report).items() if gain > RISING]
    return f"At {budget} env steps {relations}; {', '.join(up) + ' still rise' if up else 'none still rises'}."


def still_rising(report: dict) -> str:
    """Which methods were still rising over their last three passes, and which were flat."""
    gains = rising(report)
    up = [m for m, g in gains.items() if g > RISING]
    flat = [m for m, g in gains.items() if g <= RISING]
    said = lambda ms: ", ".join(f"{METHODS[m]} ({gains[m] * 100:+.1f} points)" for m in ms)  # noqa: E731
    return ((f"Still rising over their last three passes: {said(up)}" if up else "None was still rising")
            + (f"; flat: {said(flat)}." if flat else "."))


def budgets_text(report: dict, table) -> str:
    """The results page's budgets paragraph: the area under each curve, who was still rising, and
    why no comparison at matched CPU time is made."""
    rows = [["Method", "Runs", "Area under the curve, mean [lowest, highest run]", "Gain over the last three passes",
             "CPU-s a run"], ["---"] * 5]
    gains = rising(report)
    for method in report["methods"]:
        runs = [r for r in report["runs"] if r["method"] == method]
        areas = [area(r) for r in runs]
        cpu = [r["cpu_seconds"] for r in runs if r["cpu_seconds"] is not None]
        rows.append([METHODS[method], str(len(runs)),
                     f"{sum(areas) / len(areas):.1%} [{min(areas):.1%}, {max(areas):.1%}]",
                     f"{gains[method] * 100:+.1f} points ({'still rising' if gains[method] > RISING else 'flat'})",
                     f"{sum(cpu) / len(cpu):,.0f}" if cpu else "—"])
    return (f"{table(rows)}\n\nThe area under a run's curve is its success averaged over training: the area "
            f"under success against env steps (trapezoids between the passes) over the env steps spanned, 0 to 1. "
            f"A method is still rising where its mean success over seeds gained more than {RISING * 100:.0f} point "
            f"from the first to the last of its last three passes. {still_rising(report)} The run manifests record "
            f"each run's CPU-seconds for the whole run only, not per pass, so the methods are compared at matched "
            f"env steps (every pass both made) and not at matched CPU time; a method's CPU-seconds a run are in "
            f"the table.")


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
