"""The training methods on docs/training.md, from the one list (:data:`sokoban_tools.training.methods.METHODS`):
what each computes, and its recipe, each setting with its value, source and deviation; and the tuning
search stated in advance (:mod:`sokoban_tools.training.tuning`), with the split it validates on."""

from __future__ import annotations

from statistics import mean

from ...records.tuning_split import TUNING_SIZE
from ...training import tuning
from ...training.methods import METHODS
from ...training.tuning_search import SEARCH, last_passes


def _deviation(choice) -> str:
    return f"yes: {choice.reason}" if choice.deviates else "no"


def _closest(module, earlier: list) -> object | None:
    """The earlier method sharing most of ``module``'s recipe (None if none shares any)."""
    shared = [(sum(c in e.RECIPE for c in module.RECIPE), -i, e) for i, e in enumerate(earlier)]
    best = max(shared, default=(0, 0, None), key=lambda item: item[:2])
    return best[2] if best[0] else None


def method_values(table) -> dict[str, str]:
    """``training_methods``: one line a method; ``training_recipes``: a recipe table a method, the
    settings it shares with a method above it named, not repeated (``table``: the card's table maker)."""
    lines = [f"- **{m.LABEL}** (`--method {m.NAME}`, `sokoban_tools/training/{m.NAME}.py`): {m.SUMMARY}."
             for m in METHODS]
    sections = []
    for i, module in enumerate(METHODS):
        like = _closest(module, list(METHODS[:i]))
        own = [c for c in module.RECIPE if like is None or c not in like.RECIPE]
        rows = [["Setting", "Value", "Source", "Deviates from the method's source"], ["---"] * 4]
        rows += [[f"`{c.name}`", f"`{c.value}`", c.source, _deviation(c)] for c in own]
        shared = [f"`{c.name}`" for c in module.RECIPE if like is not None and c in like.RECIPE]
        rest = f"\n\nAs {like.LABEL}'s: {', '.join(shared)}." if shared else ""
        sections.append(f"### {module.LABEL}\n\n{table(rows)}{rest}")
    return {"training_methods": "\n".join(lines), "training_recipes": "\n\n".join(sections)}


def tuning_values(table, selection: dict, search: dict | None) -> dict[str, str]:
    """The Tuning split section: the split's quotas from its selection file (``selection``, the
    file as ``python -m sokoban_tools tuning`` wrote it), the grid, budget and choice rule, and the
    search's outcome from its record (``search``; ``None`` before it is run)."""
    quotas = [["Shortest solution", "Training boards", "Exact quota", "Held out for tuning"], ["---"] * 4]
    quotas += [[f"{label} actions", f"{e['source_boards']:,}", e["exact_quota"], str(e["quota"])]
               for label, e in selection["strata"].items()]
    grid = [["`--config`", "Learning rate", "Epochs", "Minibatch rows"], ["---"] * 4]
    grid += [[str(index), f"{config.learning_rate:g}", str(config.epochs), str(config.minibatch_rows)]
             for index, config in enumerate(tuning.GRID)]
    points: dict[int, list[str]] = {}  # the grid point of each method's recipe values
    for module in METHODS:
        points.setdefault(tuning.recipe_point(module), []).append(module.LABEL)
    defaults = "; ".join(f"{', '.join(labels)}: point {index}" for index, labels in sorted(points.items()))
    return {"tuning_defaults": defaults, "tuning_protocol": selection["protocol"], "tuning_boards": str(selection["selected"]["rows"]),
            "tuning_training_boards": f"{selection['selected']['training_rows_left']:,}",
            "tuning_quotas_table": table(quotas), "tuning_grid_table": table(grid),
            "tuning_configurations": str(len(tuning.GRID)), "tuning_seeds": " and ".join(map(str, tuning.SEEDS)),
            "tuning_steps": f"{tuning.STEPS:,}", "tuning_eval_every": f"{tuning.EVAL_EVERY:,}",
            "tuning_options": f"--steps {tuning.STEPS} --eval-every {tuning.EVAL_EVERY}",
            "tuning_choice_rule": tuning.CHOICE_RULE, "tuning_search": search_text(table, search)}


def search_text(table, search: dict | None) -> str:
    """The search's outcome from its committed record: each method's mean tuning-split success at
    the last pass for every grid point, its choice in bold, and what the search cost."""
    if search is None:
        return ("The search has not yet been run: no configuration has been chosen, and every run on this page "
                "trains with its method's recipe values.")
    methods = search["methods"]
    last = last_passes(search["runs"])
    rows = [["`--config`", *methods.values()], ["---"] * (1 + len(methods))]
    for point in sorted({k for _, k in last}):
        cells = []
        for method in methods:
            cell = f"{mean(last[method, point]) / TUNING_SIZE:.1%}"
            cells.append(f"**{cell}**" if search["chosen"][method] == point else cell)
        rows.append([str(point), *cells])
    hours = sum(run["cpu_seconds"] for run in search["runs"]) / 3600
    chosen = "; ".join(f"{label}: point {search['chosen'][m]}" for m, label in methods.items())
    return (f"The search was run: {len(search['runs'])} tuning runs, {hours:.1f} CPU-hours in all. Each cell is a "
            f"method's success on the {TUNING_SIZE} tuning boards at its last pass ({search['steps']:,} env steps), the "
            f"mean over seeds {' and '.join(map(str, search['seeds']))}; the chosen point in bold. `python -m "
            f"sokoban_tools tuning-search --logs DIR` read every run's log whole before writing `{SEARCH}` (each "
            f"run's passes, env steps, CPU-seconds and the SHA-256 of its log and manifest): it refuses a search "
            f"with a run missing or unfinished, or one that played a validation board or trained on a tuning "
            f"board.\n\n{table(rows)}\n\nChosen: {chosen}.")
