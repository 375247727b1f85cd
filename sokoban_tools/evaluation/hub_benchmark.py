"""The Hub's benchmark route: the dataset's ``eval.yaml`` and a model repository's ``.eval_results`` file.

A dataset repository with an ``eval.yaml`` at its root can be registered as a benchmark on
the Hub; scores that model repositories publish as ``.eval_results/*.yaml`` then show as a
leaderboard on the dataset's page and on each model's page. :func:`eval_yaml` is the
benchmark's file (the card step writes it, ``reproduce --check`` compares it) and
:func:`eval_results` the file a model repository publishes for a verified results entry
(``leaderboard --eval-results ENTRY``). Fields, as the Hub's Evaluation Results page
specifies them (docs/inspect.md says which were checked against what):

- ``eval.yaml``: ``name``, ``description`` (what the declared task asks, its metric, unit and
  direction, and where the protocol's own scores come from), ``evaluation_framework``
  (``inspect-ai``, one of the identifiers the Hub lists), ``tasks[]`` with ``id``, ``config``,
  ``split``, and, as ``inspect-ai`` requires, ``field_spec``, ``solvers`` and ``scorers`` in the
  form Inspect's own ``eval.yaml`` reader validates. That reader (inspect-ai 0.3.285,
  ``inspect_ai._eval.task.hf``) builds a single-turn task from one dataset column as the
  target and from its built-in solvers and scorers only (their names are a fixed list; no
  task file, registry name or custom scorer), so it cannot play the multi-turn protocol,
  nor check an answer by replaying it. The one task declared is therefore one whose exact
  match is right for what it asks, :data:`PLAN_TASK`: a shortest solution from the board's
  XSB, where several are equally short the first in the order up, down, left, right, which
  is the stored ``shortest_solution`` (:mod:`sokoban_tools.rules.solver` returns exactly that
  one). The protocol's scores come from the multi-turn task ``sokoban_tools/sokoban_fairness``,
  which the description names, and a model page's result for them names the turn it played
  (:data:`TASK_IDS`), not a task of ``eval.yaml``.
- ``.eval_results/<file>.yaml``: a list of one result, ``dataset.id``, ``dataset.task_id``,
  ``dataset.revision`` (the release tag whose files the entry's manifest digests), ``value``
  (the success in percent), ``date``, ``source`` (the entry's verified folder) and ``notes``
  (the turn and the settings that differ from verl-agent's).

YAML is written by hand (standard library only: the product's commands run without PyYAML):
every string is a JSON string, which YAML reads as the same string.
"""

from __future__ import annotations

import json

from sokoban_published import RELEASE

from ..layout import CONFIGURATIONS, HUB_REPO_ID, HUB_URL, RESULTS_FOLDER, VALIDATION_DATA
from ..protocol import DEFAULT_MAX_STEPS, PROTOCOL, VALIDATION_SIZE
from ..records.boards import RELEASE_REVISION

EVAL_RESULTS_FOLDER = ".eval_results"
FRAMEWORK = "inspect-ai"
CONFIG = "fairness"
SPLIT = next(split for split, name in CONFIGURATIONS[CONFIG].items() if name == VALIDATION_DATA)
# The benchmark's tasks (one leaderboard each), by the observation a run's manifest records.
TASK_IDS = {"rgb_array": "visual", "tiny_rgb_array": "text"}
TURNS = {"rgb_array": "the visual turn (rgb_array: verl-agent's prompt with the 256x256 game image)",
         "tiny_rgb_array": "the text turn (tiny_rgb_array: verl-agent's prompt with the text grid and history)"}
INSPECT_TASK = "sokoban_tools/sokoban_fairness"
# The one task eval.yaml declares, single-turn, which Inspect's eval.yaml reader builds (see the module docstring).
PLAN_TASK = "first-shortest-plan"
PLAN_PROMPT = ("A Sokoban board in XSB, one line a row: # wall, space floor, . target, $ box, * box on target, "
               "@ player, + player on target.\n\n{prompt}\n\nGive a shortest solution: the fewest player moves, "
               "walks and pushes alike, that put the box on the target. Where several are equally short, give the "
               "first when moves are compared in turn in the order up, down, left, right. Write it in LURD, one "
               "letter a move (u d l r for a walk, U D L R for a push), and nothing else.")
FIELD_SPEC = {"id": "task_id", "input": "xsb", "target": "shortest_solution",
              "metadata": ["shortest_solution_length", "seed"]}
SOLVERS = ({"name": "prompt_template", "args": {"template": PLAN_PROMPT}}, {"name": "generate"})
SCORERS = ({"name": "match", "args": {"location": "exact"}},)  # the whole answer, letter case aside


def _string(text: str) -> str:
    """``text`` as a YAML double-quoted scalar on one line: JSON's escapes, and those of the
    characters YAML also reads as line breaks, which JSON leaves as they are."""
    quoted = json.dumps(text, ensure_ascii=False)
    return quoted.replace("\u0085", "\\N").replace("\u2028", "\\L").replace("\u2029", "\\P")


def description() -> str:
    """What the declared task asks, its metric and direction, and where the protocol's scores come from."""
    return (f"{VALIDATION_SIZE} frozen, solvable 6x6 one-box Sokoban boards (protocol {PROTOCOL}). Task {PLAN_TASK} "
            f"(single turn, text): given a board's XSB, answer its shortest solution in LURD, where several are "
            f"equally short the first in the order up, down, left, right; that answer is unique, so the exact match "
            f"against the stored shortest_solution is right. Metric: accuracy, the percentage of the "
            f"{VALIDATION_SIZE} boards answered exactly (0-100, higher is better). It is not the benchmark's "
            f"protocol, which plays each board for at most {DEFAULT_MAX_STEPS} actions, one fresh prompt a turn, "
            f"in the visual turn (the game image) or the text turn, and counts a board solved however the box "
            f"got there: that needs a multi-turn task, which an eval.yaml cannot declare. Its scores are made by "
            f"`inspect eval {INSPECT_TASK}` (pip install -e '.[inspect]' in a clone), converted and verified by "
            f"replaying every episode (python -m sokoban_tools inspect-log, leaderboard).")


def _yaml_value(value) -> str:
    """A field's value: a list in flow style, a word as it is, text as a JSON string (which YAML reads alike)."""
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return value if value.isidentifier() else _string(value)


def _steps(key: str, steps: tuple[dict, ...]) -> list[str]:
    """A task's ``solvers`` or ``scorers``: each name, and its args as Inspect's reader passes them."""
    lines = [f"    {key}:"]
    for step in steps:
        lines.append(f"      - name: {step['name']}")
        if step.get("args"):
            lines += ["        args:", *(f"          {arg}: {_yaml_value(value)}" for arg, value in step["args"].items())]
    return lines


def eval_yaml() -> str:
    """The benchmark's ``eval.yaml`` (see the module docstring)."""
    lines = ["# Written by `python -m sokoban_tools card` (reproduce); do not edit. Fields: docs/inspect.md.",
             f"name: {_string('Sokoban fairness')}",
             f"description: {_string(description())}",
             f"evaluation_framework: {FRAMEWORK}",
             "tasks:"]
    lines += [f"  - id: {PLAN_TASK}", f"    config: {CONFIG}", f"    split: {SPLIT}", "    field_spec:",
              *(f"      {key}: {_yaml_value(value)}" for key, value in FIELD_SPEC.items()),
              *_steps("solvers", SOLVERS), *_steps("scorers", SCORERS)]
    return "\n".join(lines) + "\n"


def eval_results(name: str, info: dict, manifest: dict, wins: int, boards: int) -> str:
    """The ``.eval_results`` file of the verified results entry ``name`` (its ``entry.json``
    ``info`` and run ``manifest``), whose pass won ``wins`` of ``boards``."""
    settings = manifest["settings"]
    mode = settings["image_processing.observation"]
    notes = manifest.get("notes") if isinstance(manifest.get("notes"), dict) else {}
    differs = notes.get("protocol_settings")
    note = TURNS[mode] + (f"; {differs}" if differs else "")
    lines = [f"# The verified results entry {name} of {HUB_REPO_ID} (python -m sokoban_tools leaderboard: every "
             f"episode replayed), for .eval_results/ of the model repository {_string(info['model'])}.",
             f"# source.url resolves once {RESULTS_FOLDER}/{name} is merged into {HUB_REPO_ID}: open that pull "
             f"request first (docs/inspect.md, Submit a result).",
             "- dataset:",
             f"    id: {HUB_REPO_ID}",
             f"    task_id: {TASK_IDS[mode]}",
             f"    revision: {_string(RELEASE_REVISION)}",
             f"  value: {wins / boards * 100!r}",
             f"  date: {_string(info['date'])}",
             "  source:",
             f"    url: {_string(f'{HUB_URL}/tree/main/{RESULTS_FOLDER}/{name}')}",
             f"    name: {_string(f'Verified episode log ({RESULTS_FOLDER}/{name}, release {RELEASE})')}",
             f"  notes: {_string(note)}"]
    return "\n".join(lines) + "\n"


def eval_results_name(name: str) -> str:
    """The file name of an entry's result in a model repository's ``.eval_results/``."""
    return f"sokoban-fairness-{name}.yaml"
