"""The Gymnasium page's run by hand, run as the page writes it: its Python block (PPO trained with
``train``'s network, budget and schedule, validated twice through ``evaluate_policy``) and its shell
block (``score``, then ``compare`` with the committed ``examples/training/ppo-0.jsonl``, with no
``--allow-difference``), from a folder beside the clone's ``examples/``; then the script run again
on its log, which must stop at its first pass before writing anything."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import manifest_path, read_manifest

pytestmark = pytest.mark.slow

PAGE = REPO / "docs" / "gymnasium.md"
SECTION = "### A run by hand, compared with a committed run"


def blocks() -> tuple[str, str]:
    """The section's Python block and shell block, as written."""
    section = PAGE.read_text(encoding="utf-8").split(SECTION, 1)[1]
    python = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shell = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return python, shell


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("by-hand")
    (folder / "examples").symlink_to(REPO / "examples")
    return folder


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}


def test_the_pages_run_by_hand_trains_validates_twice_scores_and_compares_as_written(sb3, folder):
    python, shell = blocks()
    assert len(python.strip().splitlines()) <= 40
    assert "--allow-difference" not in shell
    script = folder / "by_hand.py"
    script.write_text(python, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=folder, env=_env(), capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Monitor" not in done.stderr  # evaluate_policy found make_sb3_vec's Monitor: no warning
    log = folder / "runs" / "ppo-by-hand.jsonl"
    updates = {}
    for record in read_episodes(log):
        updates.setdefault(record.update, set()).add(record.task_id)
    assert {update: len(boards) for update, boards in updates.items()} == {0: 256, 100_000: 256}  # its first point
    ours = read_manifest(manifest_path(log))
    committed = read_manifest(manifest_path(REPO / "examples" / "training" / "ppo-0.jsonl"))
    assert ours["settings"] == committed["settings"]  # sb3_settings and the schedule: train's, key for key
    assert ours["costs"]["training_env_steps"]["value"] == 100_352
    outputs = []
    for line in shell.strip().splitlines():
        step = subprocess.run(["bash", "-c", line], cwd=folder, env=_env(), capture_output=True, text=True,
                              timeout=600)
        assert step.returncode == 0, (line, step.stdout[-2000:], step.stderr[-2000:])
        outputs.append(step.stdout)
    score_out, compare_out = outputs
    assert "PPO by hand" in score_out and "100000" in score_out.replace(",", "")
    assert "PPO by hand" in compare_out and "allowed by --allow-difference" not in compare_out


def test_the_pages_script_run_again_stops_at_its_first_pass_before_writing(sb3, folder):
    log = folder / "runs" / "ppo-by-hand.jsonl"
    if not log.exists():
        pytest.fail("the run by hand did not run first (run this module whole)")
    before = log.read_bytes(), manifest_path(log).read_bytes()
    done = subprocess.run([sys.executable, str(folder / "by_hand.py")], cwd=folder, env=_env(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 1
    assert "already holds a validation pass of method 'PPO by hand', run '0' at update 0" in done.stderr, \
        done.stderr[-2000:]
    assert "episode_log" in done.stderr  # the Gymnasium argument that starts afresh
    assert (log.read_bytes(), manifest_path(log).read_bytes()) == before
