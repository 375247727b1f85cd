"""The card's quick start, as a newcomer runs it: its two commands copied from the card's text.

The first runs unchanged in a fresh copy of the clone (its own venv, installed from the
package registry, then ``quickstart``: the demo model, ``evaluate`` on the 256 boards,
``score``); the second is the very line ``.ci/run`` runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from fractions import Fraction

import pytest

from conftest import REPO
from sokoban_tools.evaluation.stats import success_interval
from sokoban_tools.records.episodes import read_episodes


def quick_start_commands() -> list[str]:
    """The shell commands of the card's Quick start section, in order."""
    card = (REPO / "README.md").read_text(encoding="utf-8")
    section = card.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_quick_start__has_two_one_line_commands_and_ci_runs_the_second_as_written():
    commands = quick_start_commands()
    assert len(commands) == 2 and all("\n" not in command for command in commands)
    first, tests = commands
    assert first.startswith("python3 -m venv") and first.endswith(" -m sokoban_tools quickstart")
    assert tests.startswith("python3 -m venv") and tests.endswith(" -m pytest")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert any(line == tests or line.startswith(tests + " || ") for line in ci), ci


def fresh_copy(directory) -> None:
    """The clone's files as a fresh clone holds them: tracked and new files, no venv, no caches."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file() and not name.startswith(".venv"):
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, directory / name)


@pytest.mark.slow
def test_quick_start__the_first_command_runs_unchanged_in_a_fresh_clone_and_scores_the_demo_model(tmp_path):
    first = quick_start_commands()[0]
    clone = tmp_path / "sokoban-fairness"
    clone.mkdir()
    fresh_copy(clone)
    # a newcomer's shell: no key, no venv active, nothing of this clone on the path
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("OPENAI", "VIRTUAL_ENV", "PYTHON")) and key != "CI"}
    env["PATH"] = os.pathsep.join(part for part in env.get("PATH", "").split(os.pathsep) if ".venv" not in part)
    done = subprocess.run(["bash", "-c", first], cwd=clone, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "Traceback" not in done.stderr
    out = done.stdout
    # it says what it runs, as a user would type it, and scores the log it wrote
    assert "$ python -m sokoban_tools demo-model --policy random" in out
    assert "$ python -m sokoban_tools evaluate --base-url http://127.0.0.1:" in out
    assert "$ python -m sokoban_tools score runs/quickstart/demo-model.jsonl" in out
    records = read_episodes(clone / "runs" / "quickstart" / "demo-model.jsonl")
    assert len(records) == 256 and len({r.task_id for r in records}) == 256
    wins = sum(r.won for r in records)
    assert f"{wins}/256 {wins / 256:.1%}" in out
    # a random mover's success: its 95% interval holds the exact random floor of these boards
    floor = json.loads((REPO / "fairness" / "baselines.json").read_text())["splits"]["validation"]["overall"]
    low, high = success_interval(wins, 256)
    assert low <= Fraction(floor["moves_1_4"]["success"]["exact"]) <= high, (wins, floor)
