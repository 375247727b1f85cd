"""Every published file regenerates byte for byte from seeds: the data check CI relies on.

The full check runs once, here, rather than once in CI and again in the tests:
each command's own tests check its logic on small copies.
"""

import os
import subprocess
import sys

import pytest

from conftest import REPO
import sokoban_tools.__main__ as reproduce_command

pytestmark = pytest.mark.slow


def test_reproduce__check_regenerates_every_file_identically_in_a_fresh_process_with_another_hash_seed():
    result = subprocess.run(
        [sys.executable, "-m", "sokoban_tools", "reproduce", "--check"], cwd=REPO, capture_output=True,
        text=True, env={**os.environ, "PYTHONHASHSEED": "4242"}, timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    steps = reproduce_command.STEPS
    assert [line for line in result.stdout.splitlines() if line.startswith("== ")] == [f"== {name}" for name in steps]
    assert sum(line.startswith("checked ") and line.endswith(": identical")
               for line in result.stdout.splitlines()) == len(steps)
    assert "all boards passed" in result.stdout
    assert "reproduce: all files are byte-identical" in result.stdout


def test_reproduce__stops_at_the_first_failing_step_and_names_it(monkeypatch, capsys):
    ran = []

    def run(name, options):
        ran.append(name)
        return 1 if name == "summary" else 0

    monkeypatch.setattr(reproduce_command, "run", run)
    assert reproduce_command.reproduce_command(["--check"]) == 1
    assert ran == list(reproduce_command.STEPS[:reproduce_command.STEPS.index("summary") + 1])
    assert "reproduce: the summary step failed" in capsys.readouterr().err


def test_reproduce__a_step_refusing_its_options_fails_as_its_command_line_would(capsys):
    assert reproduce_command.run("summary", ["--no-such-option"]) == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err
