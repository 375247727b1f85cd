"""docs/vagen.md's route as written: its commands, from a copy of VAGEN's files on PYTHONPATH, with no key.

The page's blocks are run as they stand, with only its placeholders filled in (the folder
holding ``vagen/``, and a free port for its 8000): the install block's ``export``, the
demo model in a second process as "a second terminal", then ``vagen evaluate`` and
``score`` in a newcomer's shell (no ``OPENAI_API_KEY``, no ``PYTHONPATH`` but the page's).
The install block's ``pip install -e '.[vagen]'`` is checked against the test environment,
which holds the extra, instead of run. The evaluation is quiet: a progress bar, not a line
per board, with VAGEN's own output kept in the dump folder.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import REPO
from unavailable import unavailable

pytestmark = pytest.mark.slow
SHARED_VAGEN = REPO.parent / "shared" / "vagen"


def page_blocks() -> dict[str, list[str]]:
    """The bash blocks of docs/vagen.md under each section title."""
    page = (REPO / "docs" / "vagen.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", page, flags=re.M)[1:]
    return {section.split("\n", 1)[0]: [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]
            for section in sections}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_vagen_page__the_install_block_is_the_extra_and_pythonpath_for_vagens_files():
    install = page_blocks()["Install"]
    assert install == ["pip install -e '.[vagen]'\nexport PYTHONPATH=/path/to/VAGEN"]
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(extras["vagen"]) <= set(extras["test"])  # so this environment holds what the page installs


def test_vagen_page__its_route_runs_as_written_with_a_local_server_no_key_and_a_progress_bar(tmp_path):
    if not (SHARED_VAGEN / "vagen" / "evaluate" / "run_eval.py").exists():
        unavailable(f"VAGEN's files are missing ({SHARED_VAGEN})")
    vagen = tmp_path / "VAGEN"  # a copy, so no bytecode lands in shared/
    shutil.copytree(SHARED_VAGEN, vagen, ignore=shutil.ignore_patterns("__pycache__"))
    assert not (vagen / "setup.py").exists() and not (vagen / "pyproject.toml").exists()  # PYTHONPATH is the way
    blocks = page_blocks()
    export = blocks["Install"][0].splitlines()[1].replace("/path/to/VAGEN", str(vagen))
    serve, run = blocks["Evaluate"]
    port = str(free_port())
    work = tmp_path / "work"
    work.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("OPENAI", "PYTHONPATH", "VIRTUAL_ENV")) and "proxy" not in key.lower()}
    env.update(PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
               PYTHONDONTWRITEBYTECODE="1")
    server = subprocess.Popen(["bash", "-c", serve.replace("8000", port)], cwd=work, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "serving at" in server.stdout.readline()
        done = subprocess.run(["bash", "-c", f"{export}\nset -e\n{run.replace('8000', port)}"], cwd=work, env=env,
                              capture_output=True, text=True, timeout=1200)
    finally:
        server.terminate()
        server.communicate(timeout=60)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "Traceback" not in done.stderr and "Missing credentials" not in done.stderr
    # quiet: the bar and the two commands' results, not VAGEN's config (its 256 seeds) or a line per rollout
    terminal = done.stderr.replace("\r", "\n").splitlines()
    assert "VAGEN episodes" in done.stderr and "256/256" in done.stderr
    assert not [line for line in terminal if "seed" in line or "Effective Config" in line or "rollout" in line]
    assert len(done.stdout.splitlines()) < 40, done.stdout
    assert "256 episodes (256 won) of 'demo' appended to runs/vagen.jsonl" in done.stdout
    assert "256/256 100.0%" in done.stdout  # score's line: the shortest-path demo model solves every board
    # VAGEN's return is on VAGEN's reward scale: never set beside the runtime's optimal return
    row = next(line for line in done.stdout.splitlines() if line.startswith("demo ") and "256/256" in line)
    assert row.endswith("—"), row
    assert "Mean return left out for demo 1 update 0: the run manifest declares other rewards" in done.stdout
    kept = (work / "runs" / "vagen-rollouts" / "sokoban-demo" / "sokoban_fairness_vagen_output.txt").read_text()
    assert "=== Effective Config ===" in kept and "[Summary written]" in kept


def test_vagen_key__a_server_of_your_own_gets_a_placeholder_and_openais_api_asks_for_the_variable(monkeypatch):
    from sokoban_tools.integrations.vagen.cli import key_override

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    own = {"backends": {"openai": {"api_key": "", "base_url": "http://127.0.0.1:8000/v1"}}}
    assert key_override(own, "openai") == ["backends.openai.api_key=EMPTY"]
    with pytest.raises(ValueError, match="export OPENAI_API_KEY"):
        key_override({"backends": {"openai": {"api_key": "", "base_url": None}}}, "openai")
    given = {"backends": {"openai": {"api_key": "sk-given", "base_url": None}}}
    assert key_override(given, "openai") == [] and key_override(own, "vllm") == []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    assert key_override(own, "openai") == []  # VAGEN's client reads the variable itself


def test_vagen_secrets__the_kept_output_errors_and_owner_file_hold_no_key_or_password(tmp_path):
    from sokoban_tools.integrations.vagen.cli import OWNER, claim_dump
    from sokoban_tools.integrations.vagen.quiet import redacted

    printed = ("=== Effective Config ===\nbackends:\n  openai:\n    model: demo\n    api_key: sk-live-0123\n"
               "    azure_api_key: null\n    base_url: http://alice:hunter2@10.0.0.5:8000/v1\n")
    kept = redacted(printed)
    assert "sk-live-0123" not in kept and "hunter2" not in kept and "alice" not in kept
    assert "api_key: <redacted>" in kept and "azure_api_key: null" in kept  # what is not a secret stays
    assert "model: demo" in kept and "http://10.0.0.5:8000/v1" in kept
    override = redacted("the overrides ['backends.openai.api_key=sk-live-0123', 'run.backend=openai'] do not compose")
    assert "sk-live-0123" not in override and "'run.backend=openai'" in override
    cfg = {"backends": {"openai": {"model": "demo", "base_url": "http://alice:hunter2@10.0.0.5:8000/v1"}}}
    claim_dump(tmp_path, cfg, "openai", evaluating=True)
    owner = (tmp_path / OWNER).read_text()
    assert "hunter2" not in owner and "http://10.0.0.5:8000/v1" in owner
