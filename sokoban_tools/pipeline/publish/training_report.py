"""The training runs' figures for docs/training.md and the card: from the committed logs of ``train``.

Each run (every method of :data:`~sokoban_tools.training.methods.METHODS` x
:data:`~sokoban_tools.layout.TRAINING_SEEDS`) is committed as ``train --publish`` wrote it under
:data:`~sokoban_tools.layout.TRAINING_RUNS` (``<method>-<seed>.jsonl`` and its manifest). This
module scores them (every validation episode replayed), tables each run's costs and success
at every pass, compares every pair of methods with their seeds counted, at matched env steps
and at matched CPU time, and draws the learning curves against both: the median over seeds with
the range of the seeds as the band.

A manifest records a run's CPU-seconds for the whole run, so the CPU-seconds at a pass are
estimated as the pass's env steps times the run's CPU-seconds per env step (validation included).
"""

from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path
from statistics import median

from ...evaluation import compare, score
from ...evaluation.charts import line_chart, short_count
from ...evaluation.pass_pairing import TOLERANCE, gap, pass_steps, update_steps
from ...evaluation.stats import holm_adjusted
from ...layout import TRAINING_RUNS, TRAINING_SEEDS, VALIDATION_DATA
from ...records.budget import ENV_STEPS_COST
from ...records.manifest import BUDGET_UNIT, ENV_STEPS, manifest_path, read_manifest, setting_differences
from ...records.rows import DataError
from ...training.publish import published_name
from ...training.train import DEFAULT_STEPS, METHODS

PAIRS = tuple(combinations(METHODS, 2))  # every pair of methods, in the methods' order
ASKED_BUDGET = 3_000_000  # env steps a run, what the comparison was asked to reach (or a flat curve)
SHORT_RUN = ("gigpo", 0, 100_000)  # docs/training.md's short run: a committed run's first passes, trained again
SEED_ENTRY = re.compile(r"(?P<prefix>.+)-seed(?P<seed>\d+)")  # results/<method>-seed<k>: one entry per seed


def run_logs(repo: Path) -> dict[str, list[Path]]:
    """The committed logs of each method, in seed order (methods without any are left out)."""
    found = {method: [repo / TRAINING_RUNS / published_name(method, seed) for seed in TRAINING_SEEDS] for method in
             METHODS}
    return {method: [log for log in logs if log.is_file()] for method, logs in found.items()
            if any(log.is_file() for log in logs)}


def scored_runs(repo: Path, logs: dict[str, list[Path]]) -> list[dict]:
    """Every run's passes (every validation episode replayed), success at each and costs; a run whose
    budget is not in env steps, as every figure here is, is refused."""
    scored = score.score([log for method in logs for log in logs[method]], validation=repo / VALIDATION_DATA,
                         verify=True)
    success = {(g["method"], g["run"], g["update"]): (g["wins"], g["boards"]) for g in scored["groups"]}
    runs = []
    for method, paths in logs.items():
        for path in paths:
            manifest = read_manifest(manifest_path(path))
            if manifest["settings"][BUDGET_UNIT] != ENV_STEPS:
                raise DataError(f"{manifest_path(path)}: counts its budget in {manifest['settings'][BUDGET_UNIT]}, "
                                f"and the training report's are env steps; commit runs that train --publish wrote")
            run = path.stem.rsplit("-", 1)[1]
            points = sorted(u for m, r, u in success if m == METHODS[method] and r == run)
            runs.append({"method": method, "seed": int(run), "log": path, "manifest": manifest, "points": points,
                         "success": [success[(METHODS[method], run, u)] for u in points],
                         "env_steps": manifest["costs"].get(ENV_STEPS_COST, {}).get("value"),
                         "cpu_seconds": manifest["costs"].get("cpu_seconds", {}).get("value"),
                         "budget": manifest["settings"]["update_budget.total_training_steps"],
                         "every": manifest["settings"]["evaluation.frequency"]})
    return runs


def training_report(repo: Path) -> dict | None:
    """Every run's passes and costs, the pairwise comparisons and the curves; None with no runs."""
    logs = run_logs(repo)
    if not logs:
        return None
    runs = scored_runs(repo, logs)
    report = {"runs": runs, "comparisons": compare_pairs(repo, logs, runs), "methods": list(logs)}
    report["matched_cpu"] = matched_cpu(report)
    report["cpu_comparisons"] = cpu_comparisons(repo, report, logs)
    return report


def compare_pairs(repo: Path, logs: dict[str, list[Path]], runs: list[dict], every_pass: bool = True) -> list[dict]:
    """Every pair of the methods of ``logs`` (their :func:`scored_runs` ``runs``) with its seeds
    counted at the passes both hold within one budget (or, not ``every_pass``, the last of them
    alone: each pass's statistics are its own, so the last one's are the same either way), the
    settings they differ in allowed and named, Holm-corrected over the pairs at their last shared pass."""
    manifests = {method: [r["manifest"] for r in runs if r["method"] == method] for method in logs}  # read once
    comparisons = []
    for a, b in PAIRS:
        if a in logs and b in logs:
            differ = {d["key"] for d in setting_differences(manifests[a], manifests[b])}
            shared = [u for u in shared_passes([r for r in runs if r["method"] in (a, b)])
                      if one_budget(u, manifests[a], manifests[b])]
            shared = shared if every_pass else shared[-1:]
            report = compare.compare(logs[a], logs[b], validation=repo / VALIDATION_DATA, allowed=differ,
                                     updates=shared)
            comparisons.append({"a": a, "b": b, "report": report, "allowed": sorted(differ)})
    verdicts = holm_adjusted([c["report"]["updates"][-1]["p_value"] for c in comparisons])
    for comparison, adjusted in zip(comparisons, verdicts):
        comparison["p_holm"] = adjusted
        comparison["separated"] = adjusted < ALPHA
    return comparisons


def cpu_comparisons(repo: Path, report: dict, logs: dict[str, list[Path]]) -> list[dict]:
    """Each pair at matched CPU time: ``compare`` of each method's pass of :func:`matched_cpu`
    (passes of different env steps, so chosen as ``--update-a``/``--update-b`` are), Holm-corrected
    over the pairs."""
    at = report["matched_cpu"]["methods"]
    found = []
    for c in report["comparisons"]:
        a, b = c["a"], c["b"]
        result = compare.compare(logs[a], logs[b], validation=repo / VALIDATION_DATA, allowed=c["allowed"],
                                 chosen=(at[a]["point"], at[b]["point"]))
        found.append({"a": a, "b": b, "last": result["updates"][-1]})
    for comparison, adjusted in zip(found, holm_adjusted([f["last"]["p_value"] for f in found])):
        comparison["p_holm"] = adjusted
        comparison["separated"] = adjusted < ALPHA
    return found


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
    runs, shared = _passes(report, method)
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


def max_update(report: dict) -> int:
    """The most env steps one update of any committed run can take (:func:`~sokoban_tools.evaluation.
    pass_pairing.update_steps`)."""
    return max(update_steps(r["manifest"]) or 0 for r in report["runs"])


def one_budget(label: int, a: list[dict], b: list[dict]) -> bool:
    """Whether the passes labelled ``label`` of the runs whose manifests are ``a`` and ``b`` are one budget
    as ``compare`` pairs them by default (:mod:`~sokoban_tools.evaluation.pass_pairing`): a published run holds its
    passes alone, so each lies within an update of its label, and an early label may be too close to an
    update's length for the two to be within the tolerance."""
    steps = [pass_steps(label, [(manifest, None) for manifest in side]) for side in (a, b)]
    largest = gap(*steps)
    return largest is not None and largest <= TOLERANCE * max(steps[0].high, steps[1].high, 1)


def _percent(wins_boards: tuple[int, int]) -> str:
    wins, boards = wins_boards
    return f"{wins / boards:.1%}"


def cpu_at(run: dict, point: int) -> float:
    """The CPU-seconds ``run`` had spent at its pass ``point``: the pass's env steps at the run's
    CPU-seconds per env step (a manifest records the whole run's only)."""
    return run["cpu_seconds"] * point / run["env_steps"]


def _passes(report: dict, method: str) -> tuple[list[dict], list[int]]:
    """A method's runs and the passes all of them made."""
    runs = [r for r in report["runs"] if r["method"] == method]
    return runs, shared_passes(runs)


def shared_passes(runs: list[dict]) -> list[int]:
    """The passes every one of the scored ``runs`` made, in order."""
    return sorted(set.intersection(*(set(r["points"]) for r in runs)))


def curves(report: dict, cpu: bool = False) -> dict[str, list[tuple[float, float, float, float]]]:
    """Per method: (env steps, or with ``cpu`` the median CPU-seconds of its runs there; median success
    over seeds, lowest, highest) at every pass all its runs made."""
    series = {}
    for method in report["methods"]:
        runs, shared = _passes(report, method)
        name = f"{METHODS[method]} ({len(runs)} seed{'s' if len(runs) > 1 else ''})"
        series[name] = []
        for u in shared:
            rates = [_rate(r, u) for r in runs]
            x = median(cpu_at(r, u) for r in runs) if cpu else u
            series[name].append((x, median(rates), min(rates), max(rates)))
    return series


def matched_cpu(report: dict) -> dict:
    """The methods at matched CPU time: the budget is the smallest of the methods' median CPU-seconds a
    run (the cheapest method's whole run), and each method is read at its last pass within it."""
    budget = min(median(r["cpu_seconds"] for r in _passes(report, m)[0]) for m in report["methods"])
    at = {}
    for method in report["methods"]:
        runs, shared = _passes(report, method)
        point = max(u for u in shared if median(cpu_at(r, u) for r in runs) <= budget * (1 + 1e-9))
        at[method] = {"point": point, "cpu_seconds": median(cpu_at(r, point) for r in runs),
                      "rates": [_rate(r, point) for r in runs]}
    return {"cpu_seconds": budget, "methods": at}


def standing(report: dict, baselines: dict) -> str:
    """One sentence: each method's median at its last pass, against the exact random floor."""
    floor = baselines["splits"]["validation"]["overall"]["moves_1_4"]["success"]["float"]
    last = sorted(((name, points[-1][1]) for name, points in curves(report).items()), key=lambda item: -item[1])
    side = ("all below" if all(v < floor for _, v in last) else
            "all above" if all(v > floor for _, v in last) else "against")
    return (f"At the last pass the medians over seeds are {', '.join(f'{n} {v:.1%}' for n, v in last)}: {side} the "
            f"{floor:.1%} that a policy drawing moves 1–4 uniformly at random reaches (the exact floor).")


def training_picture(report: dict, baselines: dict, cpu: bool = False) -> bytes:
    """The learning curves against env steps, or with ``cpu`` against CPU-seconds (the methods' passes
    need not fall at the same points: matplotlib's ticks)."""
    overall = baselines["splits"]["validation"]["overall"]
    return line_chart(curves(report, cpu), x_label="CPU-seconds of training (one thread)" if cpu else
                      "training env steps", y_label="success on the validation boards",
                      title="median over seeds; band: lowest to highest seed", mark_points=False,
                      references={"random moves 1–4 (exact floor)": overall["moves_1_4"]["success"]["float"],
                                  "optimal (ceiling)": 1.0})


def training_values(report: dict | None, table, baselines: dict) -> dict[str, object]:
    """The docs page's figures (``table`` is the card's Markdown table maker)."""
    if report is None:
        return {"training_runs_table": "No training run is committed yet.", "training_comparisons": "",
                "training_ranking": "", "training_budgets": "", "training_pairing": "",
                "training_alpha": f"{ALPHA:.0%}", "compare_resamples": f"{compare.RESAMPLES:,}",
                "training_standing": "", "training_runs": "no runs", "training_seeds": "no",
                "training_budget": "—", "training_commands": "", "training_default_steps": f"{DEFAULT_STEPS:,}",
                "training_total_cpu": "—",
                "training_budget_reason": "", "training_short_run": "No training run is committed yet.",
                "training_cpu": "—"}
    points = sorted({u for r in report["runs"] for u in r["points"]})
    rows = [["Method", "Seed", "Env steps trained", "CPU-s", "Steps/CPU-s", *[short_count(u) for u in points]],
            ["---"] * (5 + len(points))]
    for r in report["runs"]:
        cells = {u: _percent(s) for u, s in zip(r["points"], r["success"])}
        rows.append([METHODS[r["method"]], r["seed"], f"{r['env_steps']:,}" if r["env_steps"] is not None else "—",
                     f"{r['cpu_seconds']:,.0f}" if r["cpu_seconds"] is not None else "—",
                     f"{r['env_steps'] / r['cpu_seconds']:,.0f}" if r["env_steps"] and r["cpu_seconds"] else "—",
                     *[cells.get(u, "—") for u in points]])
    comparisons = [comparison_section(report, c, table) for c in report["comparisons"]]
    cpu = [r["cpu_seconds"] for r in report["runs"] if r["cpu_seconds"] is not None]
    return {"training_runs_table": table(rows), "training_comparisons": "\n\n".join(comparisons),
            "training_ranking": ranking(report), "training_budgets": budgets_text(report, table),
            "training_pairing": pairing_text(report), "training_alpha": f"{ALPHA:.0%}",
            "compare_resamples": f"{compare.RESAMPLES:,}",
            "training_standing": standing(report, baselines),
            "training_runs": f"{len(report['runs'])} runs ({len(report['methods'])} methods)",
            "training_seeds": seed_counts(report),
            "training_budget": budgets_sentence(report), "training_default_steps": f"{DEFAULT_STEPS:,}",
            "training_commands": "\n".join(sweep_commands(report)),
            "training_total_cpu": f"{sum(cpu) / 3600:.1f}",
            "training_budget_reason": budget_reason(report),
            "training_short_run": short_run(report),
            "training_cpu": f"{min(cpu):,.0f}–{max(cpu):,.0f}" if cpu else "—"}


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
            f"At every pass both made that `compare` pairs as one budget (matched env steps within "
            f"{TOLERANCE:.0%}; an update of up to {max_update(report):,} env steps makes the earliest passes too "
            f"far apart to pair):\n\n"
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
    the seed-aware test separates, at the last pass each pair shares and at matched CPU time (the
    others are tied), and which still rise; the intervals and tests are the results page's."""
    if not report["comparisons"]:
        return ""
    steps = [at_last_pass(c) for c in report["comparisons"]]
    cpu = [(f"at equal CPU ({report['matched_cpu']['cpu_seconds']:.0f} s)", c, c["last"])
           for c in report["cpu_comparisons"]]
    relations = beats([(where, c, last) for where, c, last in steps + cpu if c["separated"]])
    up = [METHODS[m] for m, gain in rising(report).items() if gain > RISING]
    rise = ("all still rise" if len(up) == len(report["methods"]) else f"{', '.join(up)} still rise" if up else
            "none still rises")
    return f"Recipe runs, {seed_counts(report)} seeds a method: {relations}; {rise}."


def at_last_pass(c: dict) -> tuple[str, dict, dict]:
    """A pair of :func:`compare_pairs` as :func:`beats` takes it: where (``at 1M``), the pair, its
    report at its last shared pass."""
    last = c["report"]["updates"][-1]
    return f"at {short_count(last['update'])}", c, last


def seed_counts(report: dict) -> str:
    """How many seeds a method has: ``10``, or a range such as ``3–10`` where the methods differ."""
    return "–".join(map(str, sorted({sum(r["method"] == m for r in report["runs"]) for m in report["methods"]})))


def beats(separated: list[tuple[str, dict, dict]]) -> str:
    """``at X W > L1, L2; W2, W3 > L3; at Y ...``: each (where, pair, its report at that point) as the
    winner over the loser, winners with the same losers named together; "others tied" after them."""
    if not separated:
        return "no two trained methods differ"
    said = {}  # where -> winner -> losers, in order
    for where, c, last in separated:
        winner, loser = (c["a"], c["b"]) if last["difference"] > 0 else (c["b"], c["a"])
        said.setdefault(where, {}).setdefault(METHODS[winner], []).append(METHODS[loser])
    parts = []
    for where, winners in said.items():
        by_losers = {}  # the same losers -> their winners
        for winner, losers in winners.items():
            by_losers.setdefault(tuple(losers), []).append(winner)
        parts.append(f"{where} " + "; ".join(f"{', '.join(w)} > {', '.join(l)}" for l, w in by_losers.items()))
    return "; ".join(parts) + "; others tied"


def budget_short(report: dict) -> bool:
    """Whether the runs stopped short of :data:`ASKED_BUDGET`."""
    return max(r["budget"] for r in report["runs"]) < ASKED_BUDGET


def _budgets(report: dict) -> dict[int, list[str]]:
    """Each budget of the committed runs (env steps) and its methods, in the methods' order."""
    found: dict[int, list[str]] = {}
    for method in report["methods"]:
        (budget,) = {r["budget"] for r in report["runs"] if r["method"] == method}
        found.setdefault(budget, []).append(method)
    return dict(sorted(found.items()))


def _labels(methods: list[str]) -> str:
    labels = [METHODS[m] for m in methods]
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


def budgets_sentence(report: dict) -> str:
    """Which methods were trained for how many env steps, in words."""
    return " and ".join(f"{_labels(methods)} for {budget:,} env steps" for budget, methods in _budgets(report).items())


def sweep_commands(report: dict) -> list[str]:
    """The command lines that train and publish the committed runs, one a method."""
    seeds = sorted({r["seed"] for r in report["runs"]})
    contiguous = seeds == list(range(seeds[0], seeds[-1] + 1))
    seeds_text = f"{seeds[0]}-{seeds[-1]}" if contiguous else ",".join(map(str, seeds))
    return [f"python -m sokoban_tools sweep --method {method} --seeds {seeds_text}"
            + ("" if budget == DEFAULT_STEPS else f" --steps {budget}") + f" --logs runs --publish {TRAINING_RUNS}"
            for budget, methods in _budgets(report).items() for method in methods]


def budget_reason(report: dict) -> str:
    """Why the runs stop short of :data:`ASKED_BUDGET`, with what the asked budget would cost; empty
    where they reach it."""
    if not budget_short(report):
        return ""
    hours = sum(cpu_at(r, ASKED_BUDGET) for r in report["runs"]) / 3600
    text = (f"The comparison was asked for {short_count(ASKED_BUDGET)} env steps a run (or until the curves are "
            f"flat): at these runs' CPU-seconds per env step, the same runs at {short_count(ASKED_BUDGET)} would "
            f"take {hours:.0f} CPU-hours, more than the 2-core machine they were trained on could give them in a "
            f"working session. Hence the budgets; [Results](results.md#trained-methods-compared) says which "
            f"methods were still rising at them.")
    budgets = _budgets(report)
    if len(budgets) > 1:
        cost = {b: median(r["cpu_seconds"] / r["env_steps"] for r in report["runs"] if r["method"] in methods)
                for b, methods in budgets.items()}
        spent = {b: median(r["cpu_seconds"] for r in report["runs"] if r["method"] in methods)
                 for b, methods in budgets.items()}
        low, high = min(budgets), max(budgets)
        text += (f" {_labels(budgets[low])} spent {cost[low] / cost[high]:.0f} times the CPU-seconds per env step of "
                 f"{_labels(budgets[high])}, so {'its' if len(budgets[low]) == 1 else 'their'} runs stop at "
                 f"{low:,} env steps, about {spent[low]:,.0f} CPU-seconds a run against the others' "
                 f"{spent[high]:,.0f}: the methods are compared at every pass both made and at matched CPU time.")
    return text


def short_run(report: dict) -> str:
    """docs/training.md's short run: the command that trains :data:`SHORT_RUN` again, and what it
    gives, from the committed run (its passes, its CPU-seconds there, the seeds' spread)."""
    method, seed, steps = SHORT_RUN
    run = next((r for r in report["runs"] if (r["method"], r["seed"]) == (method, seed)), None)
    if run is None or steps not in run["points"]:
        return f"No committed {METHODS[method]} run of seed {seed} has a pass at {steps:,} env steps."
    log = f"runs/{published_name(method, seed)}"
    shown = [u for u in run["points"] if u <= steps]
    spread = [_rate(r, steps) for r in report["runs"] if r["method"] == method and steps in r["points"]]
    return (f"The committed {METHODS[method]} run of seed {seed}, trained again to its "
            f"{steps:,}-step pass on its own schedule:\n\n```bash\npython -m sokoban_tools train --method {method} "
            f"--seed {seed} --steps {steps} --eval-every {run['every']} --log {log}\n```\n\n"
            f"Its passes print {', '.join(f'{_rate(run, u):.1%} at {u:,}' for u in shown)} env steps, those of "
            f"[`{_rel(run['log'])}`](../{_rel(run['log'])}), byte for byte on the machine class its manifest "
            f"records with the same versions; elsewhere the run is another draw, and its last pass falls in the "
            f"committed seeds' spread at {steps:,}, {min(spread):.1%}–{max(spread):.1%} over {len(spread)} seeds "
            f"(`tests/test_training_reproduces.py` checks one or the other on CI's machine). It takes about "
            f"{cpu_at(run, steps):,.0f} CPU-seconds, the committed run's at that pass: about as many seconds of "
            f"wall time on an idle core, twice that with another run beside it on one core.")


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
    the methods at matched CPU time."""
    rows = [["Method", "Runs", "Area under the curve, mean [lowest, highest run]", "Gain over the last three passes",
             "CPU-s a run, median (range)"], ["---"] * 5]
    gains = rising(report)
    for method in report["methods"]:
        runs = [r for r in report["runs"] if r["method"] == method]
        areas, cpu = [area(r) for r in runs], [r["cpu_seconds"] for r in runs]
        rows.append([METHODS[method], str(len(runs)),
                     f"{sum(areas) / len(areas):.1%} [{min(areas):.1%}, {max(areas):.1%}]",
                     f"{gains[method] * 100:+.1f} points ({'still rising' if gains[method] > RISING else 'flat'})",
                     f"{median(cpu):,.0f} ({min(cpu):,.0f}–{max(cpu):,.0f})"])
    matched = report["matched_cpu"]
    cpu_rows = [["Method", "Pass (env steps)", "CPU-s at the pass, median", "Success, median [lowest, highest seed]"],
                ["---"] * 4]
    for method, at in matched["methods"].items():
        cpu_rows.append([METHODS[method], f"{at['point']:,}", f"{at['cpu_seconds']:,.0f}",
                         f"{median(at['rates']):.1%} [{min(at['rates']):.1%}, {max(at['rates']):.1%}]"])
    pairs = [["Pair", "Passes (env steps)", "A - B [95% CI, seeds counted]", "p (runs)", "Holm p", "Verdict"],
             ["---"] * 6]
    for c in report["cpu_comparisons"]:
        last = c["last"]
        pairs.append([f"{METHODS[c['a']]} vs {METHODS[c['b']]}", f"{last['update_a']:,} vs {last['update_b']:,}",
                      compare.difference_text(last), f"{last['p_value']:.2g}", f"{c['p_holm']:.2g}",
                      "apart" if c["separated"] else "tied"])
    return (f"{table(rows)}\n\nThe area under a run's curve is its success averaged over training: the area "
            f"under success against env steps (trapezoids between the passes) over the env steps spanned, 0 to 1 (so "
            f"areas compare methods of one budget). "
            f"A method is still rising where its mean success over seeds gained more than {RISING * 100:.0f} point "
            f"from the first to the last of its last three passes. {still_rising(report)}\n\n"
            f"**At matched CPU time.** A run's manifest records its CPU-seconds for the whole run (one torch thread, "
            f"validation passes included), so a pass's CPU-seconds are estimated as its env steps at the run's "
            f"CPU-seconds per env step. The CPU budget below is the smallest of the methods' median CPU-seconds a "
            f"run, {matched['cpu_seconds']:,.0f}: each method at its last pass within it. A run's CPU-seconds also "
            f"depend on what else the machine ran (the range in the table above), so a gap of a pass or two in CPU "
            f"time is within that noise "
            f"(the chart against CPU-seconds: [Training](training.md#the-runs)). Each pair is then compared as "
            f"`compare` "
            f"compares two chosen passes (`--update-a`, `--update-b`), seeds counted, Holm-corrected over the pairs; "
            f"two methods are apart at matched CPU time only where the corrected p is under {ALPHA:.0%}.\n\n"
            f"{table(cpu_rows)}\n\n{table(pairs)}")


def _logs(report: dict, method: str) -> list[Path]:
    return [r["log"] for r in report["runs"] if r["method"] == method]


def _rel(path: Path) -> str:
    return f"{TRAINING_RUNS}/{path.name}"


def seed_rows(entries: list[dict]) -> list[tuple[str, list[dict]]]:
    """The results table's rows: an entry alone, or the entries ``<prefix>-seed<k>`` of one
    method collapsed into one row (``(name, entries)``), in the order of the success a row shows
    (a method's seeds: their median), rows of equal success in the order of their best entry."""
    groups: dict[str, list[dict]] = {}
    for entry in entries:
        match = SEED_ENTRY.fullmatch(entry["entry"])
        groups.setdefault(match.group("prefix") if match else entry["entry"], []).append(entry)
    return sorted(groups.items(), key=lambda row: -median(entry["success"] for entry in row[1]))
