"""`python -m sokoban_tools train` end to end at CI size: train, log, score, compare, leaderboard --add;
a run killed mid-training continues from its checkpoint to the same bytes as a run never stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO

from sokoban_tools.records.episodes import read_episodes, side_files
from sokoban_tools.records.manifest import manifest_path, read_manifest
from sokoban_tools.records.rows import DataError
from sokoban_tools.training.publish import publish


def command(*options: str) -> list[str]:
    return [sys.executable, "-m", "sokoban_tools", "train", *options, "--quiet"]


ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}


GROUP_METHODS = ("grpo", "gigpo", "rloo", "drgrpo")


def test_the_group_methods_train_log_score_compare_and_enter_the_leaderboard(sb3, tmp_path):
    from sokoban_tools.evaluation.compare import compare
    from sokoban_tools.evaluation.leaderboard import add_entry, leaderboard
    from sokoban_tools.evaluation.score import score
    from sokoban_tools.records.budget import ENV_STEPS_COST
    from sokoban_tools.training.methods import LABELS
    from sokoban_tools.training.train import train

    logs = {}
    for method in GROUP_METHODS:
        logs[method] = tmp_path / f"{method}.jsonl"
        passes = train(method, 0, logs[method], 4000, 2000, quiet=True)
        assert [p["update"] for p in passes] == [0, 2000, 4000]
        assert passes[-1]["env_steps"] >= 4000  # whole updates: the actual count, past the nominal
        manifest = read_manifest(manifest_path(logs[method]))
        assert manifest["costs"][ENV_STEPS_COST]["value"] == passes[-1]["env_steps"]
        assert manifest["costs"]["cpu_seconds"]["value"] > 0
        learner = manifest["notes"]["learner"]
        assert learner["hyperparameters"]["group_size"] == 8 and learner["hyperparameters"]["epochs"] == 1
        assert learner["recipe"]["clip_ratio_c"] == {"value": 3.0, "deviates": False,
                                                     "source": "verl/trainer/config/ppo_trainer.yaml: "
                                                               "actor.clip_ratio_c: 3.0 (dual-clip)"}
        assert learner["recipe"]["kl_loss"]["deviates"] and learner["recipe"]["kl_loss"]["reason"]
        assert learner["machine"]["torch_threads"] == 1 and learner["machine"]["torch"]
        assert manifest["settings"]["image_processing.observation"] == "one_hot_grid"
        assert manifest["settings"]["update_budget.groups_per_update"] == 32
    gigpo_recipe = read_manifest(manifest_path(logs["gigpo"]))["notes"]["learner"]["recipe"]
    assert gigpo_recipe["mode"]["source"] == "examples/gigpo_trainer/run_sokoban.sh: algorithm.gigpo.mode=mean_norm"
    report = score(list(logs.values()), verify=True)
    assert sorted((g["method"], g["update"], g["boards"]) for g in report["groups"]) == sorted(
        (LABELS[m], u, 256) for m in GROUP_METHODS for u in (0, 2000, 4000))
    assert all(not s["missing"] and not s["unexpected"] for s in report["schedule"])
    training = [r for r in read_episodes(logs["grpo"]) if r.phase == "training"]
    assert len(training) >= 2 * 256 and len({r.update for r in training}) >= 2  # labelled by env steps
    compared = compare([logs["grpo"]], [logs["gigpo"]])
    assert [u["update"] for u in compared["updates"]] == [0, 2000, 4000]
    results = tmp_path / "results"
    add_entry(results, "grpo-0", logs["grpo"], "none (MLP trained from scratch)", "the test", "https://example.org",
              "2026-12-03", run="0", update=4000)
    board = leaderboard(results)
    assert not board["refused"] and board["entries"][0]["replayed"] == 256


def wait_for(predicate, timeout: float, what: str) -> None:
    ends = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > ends:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


def training_started(log) -> bool:
    """A training row is in the log: the run is past its first checkpoint."""
    try:
        return b'"phase":"training"' in log.read_bytes()
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("method, every", [("ppo", 4096), ("gigpo", 2048)])  # PPO's rollouts are 4,096 steps
def test_a_run_killed_mid_training_resumes_to_the_bytes_of_a_run_never_stopped(sb3, tmp_path, method, every):
    whole, killed = tmp_path / "whole.jsonl", tmp_path / "killed.jsonl"
    options = ("--method", method, "--seed", "4", "--steps", str(4 * every), "--eval-every", str(every))
    uninterrupted = subprocess.Popen(command(*options, "--log", str(whole)), env=ENV, cwd=tmp_path,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    victim = subprocess.Popen(command(*options, "--log", str(killed)), env=ENV, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoint = killed.with_name(killed.name + ".checkpoint")
    wait_for(lambda: training_started(killed) or victim.poll() is not None, 600, "training to start")
    seen = checkpoint.stat().st_mtime_ns  # the checkpoint after the pass before training
    wait_for(lambda: checkpoint.stat().st_mtime_ns != seen or victim.poll() is not None, 600,
             "the checkpoint after the first pass in training")
    # then a record after it, so the kill has records to set aside: on a busy machine the kill could
    # otherwise land right after the checkpoint, before the run wrote anything more
    written = killed.stat().st_size
    wait_for(lambda: killed.stat().st_size > written or victim.poll() is not None, 600,
             "a record after that checkpoint")
    os.kill(victim.pid, signal.SIGKILL)  # in training after that checkpoint: its episodes under way
    victim.wait()
    assert victim.returncode == -signal.SIGKILL  # killed, not finished
    published = tmp_path / "published"
    with pytest.raises(DataError, match="has not reached its budget"):
        publish(killed, published, method, 4)
    assert not published.exists()
    resumed = subprocess.run(command(*options, "--log", str(killed)), env=ENV, cwd=tmp_path, capture_output=True,
                             text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert uninterrupted.wait(timeout=600) == 0, uninterrupted.stderr.read().decode()
    assert killed.read_bytes() == whole.read_bytes()  # no record lost or doubled, the same bytes
    records = read_episodes(killed)
    assert sorted({r.update for r in records if r.phase == "validation"}) == [0, every, 2 * every, 3 * every,
                                                                               4 * every]
    reasons = [reason for _, _, reason in side_files(killed)]  # what was set aside is kept beside the log
    assert len(reasons) == 1 and reasons[0].startswith("resume-from-"), reasons
    assert int(reasons[0].removeprefix("resume-from-")) >= every  # from a checkpoint after a pass in training
    again = subprocess.run(command(*options, "--log", str(killed), "--publish", str(published)), env=ENV,
                           cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and killed.read_bytes() == whole.read_bytes()  # a finished run stays finished
    out = published / f"{method}-4.jsonl"  # its validation passes, line for line, and its manifest
    assert out.read_bytes() == b"".join(line for line in whole.read_bytes().splitlines(keepends=True)
                                        if b'"phase":"validation"' in line)
    assert manifest_path(out).read_bytes() == manifest_path(killed).read_bytes()


def test_the_cards_results_table_collapses_one_methods_seeds_into_one_row_ranked_by_its_median():
    from sokoban_tools.pipeline.publish.card import results_table

    def entry(name, wins, vs_best):
        return {"entry": name, "model": "MLP", "success": wins / 256, "ci95": [0.0, 1.0], "vs_best": vs_best}

    best = None
    below = {"indistinguishable": False, "p_holm": 1e-9}
    level = {"indistinguishable": True, "p_holm": 0.5}
    entries = [entry("optimal", 256, best), entry("ppo-seed1", 60, level), entry("ppo-seed0", 20, below),
               entry("ppo-seed2", 40, below), entry("random-policy", 50, below)]
    table = results_table(entries).splitlines()
    # ranked by the success each row shows: the seeds' median (15.6%) is under the random policy's 19.5%,
    # although one seed (23.4%) is above it
    assert [row.split(" | ")[0] for row in table[2:]] == ["| `optimal`", "| `random-policy`", "| `ppo-seed*` (3 seeds)"]
    assert "median 15.6% (7.8%–23.4%) | 1 of 3 ≈ best |" in table[4]


def test_the_committed_runs_of_a_method_share_one_budget_and_a_pass_every_tenth_of_it():
    """Every seed of every method is committed, trained to its method's one budget (the default, or the
    budget docs/training.md gives with its command) with a pass every tenth of it, published."""
    from sokoban_tools.layout import TRAINING_SEEDS
    from sokoban_tools.pipeline.publish.training_report import run_logs
    from sokoban_tools.training.methods import METHODS
    from sokoban_tools.training.train import DEFAULT_STEPS

    logs = run_logs(REPO)
    assert sorted(logs) == sorted(m.NAME for m in METHODS)
    budgets = set()
    for method, method_logs in logs.items():
        assert len(method_logs) == len(TRAINING_SEEDS), method
        settings = [read_manifest(manifest_path(log))["settings"] for log in method_logs]
        (budget,) = {s["update_budget.total_training_steps"] for s in settings}
        assert {s["evaluation.frequency"] for s in settings} == {budget // 10}, method
        budgets.add(budget)
        for log in method_logs:
            assert b'"phase":"training"' not in log.read_bytes(), log  # published: the passes alone
    assert DEFAULT_STEPS in budgets
