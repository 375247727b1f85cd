"""The Hub's benchmark route: the dataset's ``eval.yaml`` and a model repository's ``.eval_results`` file.

A dataset repository with an ``eval.yaml`` at its root can be registered as a benchmark on
the Hub; scores that model repositories publish as ``.eval_results/*.yaml`` then show as a
leaderboard on the dataset's page and on each model's page. :func:`eval_yaml` is the
benchmark's file (the card step writes it, ``reproduce --check`` compares it) and
:func:`eval_results` the file a model repository publishes for a verified results entry
(``leaderboard --eval-results ENTRY``). Fields, as the Hub's Evaluation Results page
specifies them (docs/inspect.md says which were checked against what):

- ``eval.yaml``: ``name``, ``description`` (the metric, its unit and direction, and the
  task that plays the protocol), ``evaluation_framework`` (``inspect-ai``, one of the
  identifiers the Hub lists), ``tasks[]`` with ``id``, ``config``, ``split``, and, as
  ``inspect-ai`` requires, ``field_spec``, ``solvers`` and ``scorers`` in the form Inspect's own
  ``eval.yaml`` reader validates. That reader builds single-turn tasks from built-in
  solvers and scorers only, so these fields state the single-turn reading of a board (its
  XSB in, a shortest solution as the target); the benchmark's number comes from the
  multi-turn task ``sokoban_tools/sokoban_fairness``, which the description names.
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
# The single-turn reading of a board that Inspect's eval.yaml reader can build (see the module docstring).
FIELD_SPEC = {"id": "task_id", "input": "xsb", "target": "shortest_solution",
              "metadata": ["shortest_solution_length", "seed"]}
SOLVERS = ({"name": "generate"},)
SCORERS = ({"name": "match"},)


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def description() -> str:
    """What the benchmark measures, its metric and direction, and how a score is made."""
    return (f"{VALIDATION_SIZE} frozen, solvable 6x6 one-box Sokoban boards (protocol {PROTOCOL}), played once each "
            f"as verl-agent's validation plays them: at most {DEFAULT_MAX_STEPS} actions, one fresh prompt a turn, "
            f"verl-agent's decoding. Metric: success, the percentage of the {VALIDATION_SIZE} boards solved "
            f"(0-100, higher is better), with its exact 95% interval. Task visual: the rgb_array turn (the game "
            f"image); task text: the tiny_rgb_array turn (a text grid). Scores are made by the multi-turn Inspect "
            f"task `inspect eval {INSPECT_TASK}` (pip install -e '.[inspect]' in a clone; the single-turn "
            f"field_spec, solvers and scorers below are only what an eval.yaml can hold), converted and verified "
            f"by replaying every episode (python -m sokoban_tools inspect-log, leaderboard).")


def eval_yaml() -> str:
    """The benchmark's ``eval.yaml`` (see the module docstring)."""
    lines = [f"# Written by `python -m sokoban_tools card` (reproduce); do not edit. Fields: docs/inspect.md.",
             f"name: {_string('Sokoban fairness')}",
             f"description: {_string(description())}",
             f"evaluation_framework: {FRAMEWORK}",
             "tasks:"]
    for mode, task_id in TASK_IDS.items():
        lines += [f"  - id: {task_id}", f"    config: {CONFIG}", f"    split: {SPLIT}", "    field_spec:"]
        for key, value in FIELD_SPEC.items():
            shown = "[" + ", ".join(value) + "]" if isinstance(value, list) else value
            lines.append(f"      {key}: {shown}")
        lines += ["    solvers:", *(f"      - name: {s['name']}" for s in SOLVERS),
                  "    scorers:", *(f"      - name: {s['name']}" for s in SCORERS)]
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
             f"episode replayed), for .eval_results/ of the model repository {info['model']}.",
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
