"""A run is opened once: its manifest is read at most once by each command, and costs are never lost.

``score``, ``compare`` and ``leaderboard`` ask a log's manifest several things, and a training
run builds hundreds of environments on one log; each used to read the manifest again (a GRPO
set-up 271 times, ``score`` 4-5 times a log). The writer of a log keeps what it wrote, so a
user's own ``add_costs`` beside it must still be kept when the writer adds its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sokoban_tools.records import manifest as manifest_module
from sokoban_tools.records.episodes import episode_writer
from sokoban_tools.records.manifest import add_costs, manifest_path, new_manifest, read_manifest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "training"


@pytest.fixture
def manifest_reads(monkeypatch):
    """How many times a manifest file is read, whichever reader reads it."""
    reads = []
    real = manifest_module.read_bounded

    def counted(path, *args, **kwargs):
        reads.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(manifest_module, "read_bounded", counted)
    return reads


def settings(**changed) -> dict:
    values = {setting.key: None for setting in manifest_module.SETTINGS}
    values.update(manifest_module.environment_settings(),
                  **{"action_horizon": 15, "update_budget.unit": "updates", **changed})
    return values


def test_score_reads_each_logs_manifest_once_even_when_verifying(tmp_path, manifest_reads):
    from sokoban_tools.evaluation.score import score

    logs = []
    for name in ("grpo-0.jsonl", "gigpo-0.jsonl"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
        shutil.copy(manifest_path(EXAMPLES / name), manifest_path(tmp_path / name))
        logs.append(tmp_path / name)
    report = score(logs, verify=True)
    assert report["verification"]["verified"] == report["validation_rows"] > 0
    assert sorted(manifest_reads) == sorted(manifest_path(log) for log in logs)


def test_a_vector_of_environments_on_an_existing_log_reads_its_manifest_once(tmp_path, gymnasium,
                                                                              manifest_reads):
    from sokoban_tools.integrations.gymnasium_env.env import make_vector

    log = tmp_path / "run.jsonl"
    make_vector(16, split="validation", episode_log=log).close()
    assert manifest_reads == []  # written by the first environment, known to the other fifteen
    make_vector(16, split="validation", episode_log=log).close()
    assert manifest_reads == [manifest_path(log)]  # checked by the first, once


def test_costs_a_user_adds_beside_an_open_writer_are_kept_when_the_writer_adds_its_own(tmp_path):
    log = tmp_path / "run.jsonl"
    with episode_writer(log) as writer:
        writer.write_manifest(new_manifest("GRPO", settings()), log)
        add_costs(log, {"gpu": ("GPU-seconds", 2.5)})  # the module's, as a hand-written learner calls it
        writer.add_costs({"gpu": ("GPU-seconds", 1.0), "tokens": ("tokens", 7)})
    assert read_manifest(manifest_path(log))["costs"] == {"gpu": {"unit": "GPU-seconds", "value": 3.5},
                                                          "tokens": {"unit": "tokens", "value": 7}}


def test_another_runs_manifest_is_refused_by_the_writer_of_a_log_holding_records(tmp_path):
    from sokoban_tools.records.episodes import EpisodeRecord

    log = tmp_path / "run.jsonl"
    with episode_writer(log) as writer:
        writer.write_manifest(new_manifest("GRPO", settings()), log)
        writer.append([EpisodeRecord("GRPO", "0", "training", 0, "t", False, 0, -1.5, None, "")])
        with pytest.raises(manifest_module.ManifestError, match="another settings"):
            writer.write_manifest(new_manifest("GRPO", settings(action_horizon=30)), log)
    assert read_manifest(manifest_path(log))["settings"]["action_horizon"] == 15


def test_a_run_of_other_hyperparameters_is_refused_by_the_writer_that_checks_the_manifest(tmp_path):
    """``train --config K`` states the same controlled settings as the default recipe: only the learner's
    hyperparameters in the notes tell the runs apart, and the writer's one check of the manifest refuses
    the other run's, so ``train`` reads no manifest itself."""
    from sokoban_tools.records.episodes import EpisodeRecord

    def run(**hyperparameters):
        return new_manifest("GRPO", settings(), notes={"learner": {"hyperparameters": hyperparameters}})

    log = tmp_path / "run.jsonl"
    with episode_writer(log) as writer:
        writer.write_manifest(run(lr=0.001, epochs=4), log)
        writer.append([EpisodeRecord("GRPO", "0", "training", 0, "t", False, 0, -1.5, None, "")])
        writer.write_manifest(run(lr=0.001, epochs=4), log)  # the same run: kept
        with pytest.raises(manifest_module.ManifestError) as refused:
            writer.write_manifest(run(lr=0.01, epochs=4, clip=0.2), log)
    assert str(refused.value).startswith(f"{manifest_path(log)}: records a run with other hyperparameters (clip, lr: "
                                         f"another --config, or none)")
    assert str(refused.value).endswith("give this run its own episode log (train's --log)")
    with episode_writer(log) as writer:  # a new process: its first check refuses it too
        with pytest.raises(manifest_module.ManifestError, match="other hyperparameters"):
            writer.write_manifest(run(lr=0.01, epochs=4), log)
        writer.write_manifest(new_manifest("GRPO", settings()), log)  # notes without a learner: nothing to tell apart
    assert read_manifest(manifest_path(log))["notes"]["learner"]["hyperparameters"] == {"lr": 0.001, "epochs": 4}
