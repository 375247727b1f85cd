"""Inspect's page as a new user follows it: its walk-through block run in order in a fresh clone of the
committed tree, from the demo model to an entry that ``leaderboard --add`` accepts and the model page's
``.eval_results`` file, and ``git status`` then listing only the entry (no ``logs/``, ``runs/`` or
``.eval_results/``)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import pytest
import yaml

from conftest import REPO
from test_inspect_task import entry_point_folder, require_inspect

pytestmark = pytest.mark.slow

SECTION = "## From a clone to a model page, end to end"


def walk_through() -> str:
    section = (REPO / "docs" / "inspect.md").read_text(encoding="utf-8").split(SECTION, 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_inspect_pages_walk_through_runs_in_a_fresh_clone_to_an_accepted_entry_and_its_eval_results(
        tmp_path, monkeypatch):
    require_inspect(monkeypatch)
    block = walk_through()
    install, *commands = block.splitlines()
    assert install.startswith("pip install -e '.[inspect]'")  # done by this test's environment
    script = "\n".join(commands).replace("8000", str(free_port()))  # a free port on a shared machine
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=300)
    env = {key: value for key, value in os.environ.items() if key not in ("LOCAL_API_KEY", "OPENAI_API_KEY")}
    env.update(PYTHONPATH=os.pathsep.join([str(entry_point_folder(tmp_path)), str(clone)]),
               PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["bash", "-e", "-c", script], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "it passes every check of the leaderboard" in done.stdout
    status = done.stdout.strip().splitlines()[-1]
    assert status == "?? results/my-model/", done.stdout[-2000:]  # logs/, runs/, .eval_results/ ignored
    assert (clone / "logs").is_dir() and (clone / "runs" / "model.jsonl").is_file()
    written = (clone / ".eval_results" / "sokoban-fairness-my-model.yaml").read_text(encoding="utf-8")
    assert "source.url resolves once results/my-model is merged" in written
    (result,) = yaml.safe_load(written)
    assert result["dataset"]["task_id"] == "text" and 0 < result["value"] < 100
    assert result["source"]["url"].endswith("/tree/main/results/my-model")
