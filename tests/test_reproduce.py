"""Every published file regenerates byte for byte from seeds: the data check CI relies on.

It runs once, here, rather than once in CI and again in the tests: each
command's own tests check its logic on small copies.
"""

import os
import subprocess
import sys

from conftest import REPO
from sokoban_tools.__main__ import STEPS


def test_reproduce__check_regenerates_every_file_identically_in_a_fresh_process_with_another_hash_seed():
    result = subprocess.run(
        [sys.executable, "-m", "sokoban_tools", "reproduce", "--check"], cwd=REPO, capture_output=True,
        text=True, env={**os.environ, "PYTHONHASHSEED": "4242"}, timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line for line in result.stdout.splitlines() if line.startswith("== ")] == [f"== {name}" for name, _ in STEPS]
    assert sum(line.startswith("checked ") and line.endswith(": identical")
               for line in result.stdout.splitlines()) == len(STEPS)
    assert "all boards passed" in result.stdout
    assert "reproduce: all files are byte-identical" in result.stdout
