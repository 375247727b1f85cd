"""The batched PPO learner (not yet `train`'s): one run logs every episode and its validation passes under its
env-step schedule, the log scores and replays, the same seed writes the same bytes, and the benchmark sets its
cost beside the current trainer's."""

from __future__ import annotations

import re

from sokoban_tools.evaluation.replay import verify_log
from sokoban_tools.evaluation.score import score
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import manifest_path, read_manifest


def test_a_batched_run_logs_its_passes_on_schedule_and_the_same_seed_writes_the_same_bytes(sb3, tmp_path):
    from sokoban_tools.training.batched_ppo import METHOD, ROLLOUT, ENVS, train_batched

    logs = [tmp_path / "first.jsonl", tmp_path / "again.jsonl"]
    passes = [train_batched(3, log, 8192, 4096) for log in logs]
    assert passes[0][-1]["env_steps"] == 8192 == 2 * ROLLOUT * ENVS
    assert [(p["update"], p["env_steps"]) for p in passes[0]] == [(0, 0), (4096, 4096), (8192, 8192)]
    assert [p["wins"] for p in passes[0]] == [p["wins"] for p in passes[1]]
    assert logs[0].read_bytes() == logs[1].read_bytes()
    report = score([logs[0]], verify=True)
    assert [(g["method"], g["update"], g["boards"]) for g in report["groups"]] == [(METHOD, u, 256)
                                                                                  for u in (0, 4096, 8192)]
    assert [g["wins"] for g in report["groups"]] == [p["wins"] for p in passes[0]]
    assert all(not s["missing"] and not s["unexpected"] for s in report["schedule"])
    training = [r for r in read_episodes(logs[0]) if r.phase == "training"]
    assert len(training) > 256 and {r.update for r in training} == {0, 4096}  # labelled by the rollout's start
    assert verify_log(logs[0]).verified == len(read_episodes(logs[0]))  # every record replays on its board
    notes = read_manifest(manifest_path(logs[0]))["notes"]["learner"]
    assert notes["hyperparameters"]["batch_size"] == 512 and "GAE" in notes["estimator"]


def test_the_benchmark_sets_the_batched_learners_cost_beside_the_current_trainers_in_one_run(sb3, monkeypatch):
    from sokoban_tools.pipeline.publish import training_benchmark as tb

    monkeypatch.setattr(tb, "BATCHED_STEPS", 4096)
    monkeypatch.setattr(tb, "SHARE_STEPS", 512)
    [(what, figure, _, goal)] = tb.batched_figures()
    assert "against `train --method ppo`" in what and goal == "≤ 120 CPU-s, ≥ 5× (issue 47)"
    assert re.fullmatch(r"batched [\d,]+ CPU-s \([\d,]+ s wall; 4,096 env steps run\); `train --method ppo` "
                        r"[\d,]+ CPU-s \([\d,]+ s wall; \d[\d,]* env steps run\): \d+× per env step", figure), figure
