"""Bad input refused at the border before anything is written, and faults met without a
traceback: the patched trainer's hooks (make_fair_envs, validation passes, costs), compare's
checks of records against their manifests, and the command line's pipes and locks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from functools import partial
from types import SimpleNamespace

import pytest

from conftest import REPO
from sokoban_tools import __main__ as command_line
from sokoban_tools.evaluation import compare, score
from sokoban_tools.integrations.verl_agent import hooks
from sokoban_tools.integrations.verl_agent.envs import build_sokoban_envs
from sokoban_tools.pipeline import artifacts
from sokoban_tools.records.manifest import (ManifestError, add_costs, costs_from_verl_metrics, manifest_path,
                                            new_manifest, read_manifest, write_manifest)
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.tasks import load_validation
from test_manifest import composed, example_settings, run_log
from test_score_compare import records, write

import sokoban_published


# --- 28.2: make_fair_envs checks every setting before it writes -----------------------------

def fair_config(tmp_path, **env):
    """verl-agent's composed config with the patch's ``env.fairness*`` keys, as the patched
    ppo_trainer.yaml gives them, changed by ``env``; small batches."""
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(composed(), resolve=True)
    config["env"].update({"fairness": True, "fairness_boards": str(REPO), "fairness_revision": None,
                          "fairness_log": str(tmp_path / "run" / "episodes.jsonl"), "fairness_method": "grpo",
                          "fairness_run": "seed0"})
    config["data"]["train_batch_size"], config["env"]["rollout"]["n"] = 2, 2
    config["data"]["val_batch_size"] = 64
    for dotted, value in env.items():
        node = config
        *parents, last = dotted.split(".")
        for part in parents:
            node = node[part]
        node[last] = value
    return OmegaConf.create(config)


def make(config, monkeypatch):
    monkeypatch.setattr(hooks, "build_sokoban_envs", partial(build_sokoban_envs, backend="local"))
    return hooks.make_fair_envs(config, lambda envs, projection, config: envs, {"num_cpus": 0.1})


def tampered_copy(tmp_path):
    copy = tmp_path / "boards"
    shutil.copytree(REPO / "fairness", copy / "fairness")
    data = bytearray((copy / "fairness/evaluation.jsonl").read_bytes())
    data[100] ^= 1
    (copy / "fairness/evaluation.jsonl").write_bytes(bytes(data))
    return str(copy)


def special(tmp_path, kind):
    path = tmp_path / "special"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        return "/dev/null"
    return str(path)


BAD_SETTINGS = [
    ({"env.fairness_boards": "missing"}, "does not exist"),
    ({"env.fairness_boards": "a file"}, "is not a folder"),
    ({"env.fairness_boards": ""}, "env.fairness_boards must name a local copy"),
    ({"env.fairness_boards": "tampered"}, "is not the published file"),
    ({"env.fairness_boards": None, "env.fairness_revision": ""}, "env.fairness_revision must name a Hub tag"),
    ({"env.fairness_boards": None, "env.fairness_revision": 3}, "env.fairness_revision must name a Hub tag"),
    ({"env.fairness_revision": "v1.0.0"}, "not both"),
    ({"env.fairness_log": "directory"}, "is a directory"),
    ({"env.fairness_log": "fifo"}, "is not a regular file"),
    ({"env.fairness_log": "/dev/null"}, "is not a regular file"),
    ({"data.val_batch_size": 0}, "data.val_batch_size (or null) must be a positive integer, got 0"),
    ({"env.max_steps": 0}, "max_steps (env.max_steps) must be a positive integer, got 0"),
    ({"env.rollout.n": 2**40}, "data.train_batch_size=2 x env.rollout.n=1099511627776 asks for"),
    ({"data.train_batch_size": 2**40}, "more than the runtime holds (at most 65,536"),
    ({"env.sokoban.mode": "human"}, "env.sokoban.mode must be one of"),
    ({"env.sokoban.dim_room": 6}, "dim_room=6 is not a setting of the stored boards"),
    ({"env.sokoban.dim_room": None}, "dim_room=None is not a setting of the stored boards"),
    ({"env.fairness_method": None}, "env.fairness_method labels every episode record"),
    ({"env.fairness_run": None}, "env.fairness_run labels every episode record"),
    ({"env.fairness_run": ""}, "env.fairness_run labels every episode record"),
]


@pytest.mark.parametrize("changes, named", BAD_SETTINGS, ids=[str(c) for c, _ in BAD_SETTINGS])
def test_make_fair_envs__a_refused_setting_writes_nothing_and_the_corrected_run_starts(tmp_path, monkeypatch,
                                                                                         changes, named):
    values = {}
    for key, value in changes.items():
        if key == "env.fairness_boards" and value == "missing":
            value = str(tmp_path / "missing")
        elif key == "env.fairness_boards" and value == "a file":
            (tmp_path / "a file").write_text("")
            value = str(tmp_path / "a file")
        elif value == "tampered":
            value = tampered_copy(tmp_path)
        elif key == "env.fairness_log" and value in ("directory", "fifo"):
            value = special(tmp_path, value)
        values[key] = value
    before = sorted(tmp_path.rglob("*"))
    beside_dev_null = os.path.lexists("/dev/null.manifest.json")
    with pytest.raises((ValueError, TypeError, FileNotFoundError)) as refused:
        make(fair_config(tmp_path, **values), monkeypatch)
    assert named in str(refused.value) and "\n" not in str(refused.value)
    assert sorted(tmp_path.rglob("*")) == before  # no manifest, no log folder
    assert os.path.lexists("/dev/null.manifest.json") == beside_dev_null
    training, validation = make(fair_config(tmp_path), monkeypatch)  # the corrected run is not blocked
    try:
        assert read_manifest(manifest_path(tmp_path / "run" / "episodes.jsonl"))["method"] == "grpo"
    finally:
        training.close()
        validation.close()


def test_make_fair_envs__a_log_of_records_without_a_manifest_is_not_adopted(tmp_path, monkeypatch):
    log = tmp_path / "run" / "episodes.jsonl"
    log.parent.mkdir()
    write(log, records("other", "s1", 0, [True] * 256))
    with pytest.raises(ValueError, match="holds episode records but no manifest .* move episodes.jsonl aside"):
        make(fair_config(tmp_path), monkeypatch)
    assert not manifest_path(log).exists()


# --- 28.3: validation passes ---------------------------------------------------------------

@pytest.fixture
def managers(tmp_path, monkeypatch):
    training, validation = make(fair_config(tmp_path), monkeypatch)
    yield SimpleNamespace(envs=training), SimpleNamespace(envs=validation)
    training.close()
    validation.close()


def loader(dataset):
    return SimpleNamespace(dataset=dataset, collate_fn=list)


def play_pass(validation, update) -> int:
    """A validation pass as the patched _validate plays it; its batches."""
    batches = 0
    for _ in hooks.validation_batches(loader([{"row": 1}, {"row": 2}]), validation, update):
        validation.envs.reset()
        batches += 1
    return batches


@pytest.mark.parametrize("dataloader, named", [
    (loader([]), "the validation dataset is empty"),
    ((row for row in range(3)), "must be a DataLoader with a dataset and a collate_fn .* got generator"),
    (loader(row for row in range(3)), "dataset must be sized and indexable .* got generator"),
])
def test_validation_batches__a_dataloader_it_cannot_use_is_named_before_the_pass(managers, dataloader, named):
    _, validation = managers
    with pytest.raises((TypeError, ValueError), match=named):
        hooks.validation_batches(dataloader, validation, 0)
    assert validation.envs.chunks_played == 0  # no pass begun
    assert play_pass(validation, 0) == 4


def test_validation_batches__the_same_update_is_validated_once(managers):
    _, validation = managers
    assert play_pass(validation, 5) == 4
    with pytest.raises(RuntimeError, match="update 5 was validated already"):
        hooks.validation_batches(loader([1, 2]), validation, 5)
    assert play_pass(validation, 6) == 4


def test_label_training_update__refuses_the_validation_manager(managers):
    training, validation = managers
    with pytest.raises(TypeError, match="takes the training environment manager"):
        hooks.label_training_update(validation, 3)
    hooks.label_training_update(training, 3)
    training.envs.reset()
    training.envs.end_episodes()  # the rollout's episodes, in the log, labelled with the trainer's step
    assert {r.update for r in read_episodes(training.envs.config.episode_log)} == {3}
    with pytest.raises(TypeError, match="validation_batches takes the validation environment manager"):
        hooks.validation_batches(loader([1]), training, 0)


# --- 28.4: costs and the records against their manifests ----------------------------------

@pytest.mark.parametrize("metrics, named", [
    ({"timing_s/gen": -1.0}, "metrics timing_s/gen must be a finite number >= 0"),
    ({"perf/total_num_tokens": -5}, "metrics perf/total_num_tokens must be a finite number >= 0"),
    ({"timing_s/gen": 10 ** 400}, "metrics timing_s/gen must be a finite number >= 0"),
    ({"timing_s/gen": float("nan")}, "must be a finite number"),
    ({"timing_s/gen": None}, "must be a finite number"),
    (None, "metrics must be the trainer's metrics of one step"),
])
def test_costs__a_negative_missing_or_overflowing_value_is_refused_before_the_manifest_changes(tmp_path, metrics,
                                                                                                named):
    log = tmp_path / "episodes.jsonl"
    write_manifest(log, new_manifest("grpo", example_settings()))
    add_costs(log, costs_from_verl_metrics({"timing_s/gen": 5.0}, 1))
    before = manifest_path(log).read_bytes()
    with pytest.raises((ValueError, TypeError), match=named):
        add_costs(log, costs_from_verl_metrics(metrics, 1))
    with pytest.raises(ManifestError, match="an amount spent must be a finite number >= 0"):
        add_costs(log, {"gen": ("GPU-seconds", -1.0)})  # the running total would stay >= 0
    assert manifest_path(log).read_bytes() == before


def test_costs__verls_whole_step_is_kept_as_its_untimed_rest_so_the_entries_add_up():
    entries = costs_from_verl_metrics({"timing_s/step": 10.0, "timing_s/gen": 6.0, "timing_s/update_actor": 3.0,
                                       "timing_s/testing": 0.5}, 2)
    assert entries == {"gen": ("GPU-seconds", 12.0), "update_actor": ("GPU-seconds", 6.0),
                       "testing": ("GPU-seconds", 1.0), "step_other": ("GPU-seconds", 1.0)}
    assert sum(amount for _, amount in entries.values()) == 20.0  # the step, counted once


def test_manifest__a_setting_too_large_for_a_float_is_refused_in_one_line(tmp_path):
    with pytest.raises(ManifestError, match="decoding.training.temperature must be a finite number"):
        new_manifest("grpo", example_settings(**{"decoding.training.temperature": 10 ** 400}))


def test_compare__an_episode_longer_than_the_manifests_horizon_is_refused(tmp_path, capsys):
    a = run_log(tmp_path, "a", "CPAD", example_settings())
    b = run_log(tmp_path, "b", "GRPO", example_settings())
    long = [replace(record, actions=20) if i == 3 else record for i, record in
            enumerate(records("CPAD", "s1", 0, [True] * 256))]
    write(a, long, records("CPAD", "s1", 5, [False] * 256))
    assert compare.main(["--a", str(a), "--b", str(b)]) == 1
    err = capsys.readouterr().err
    assert f"{a}:4: an episode of 20 actions, but the manifest beside {a} declares an action horizon of 15" in err
    assert score.main([str(a)]) == 1  # score reads that manifest too, and the same check refuses the row
    assert f"{a}:4: an episode of 20 actions, but the manifest beside {a}" in capsys.readouterr().err


def test_compare__method_a_of_a_log_whose_manifest_is_another_methods_is_refused(tmp_path, capsys):
    a = run_log(tmp_path, "a", "CPAD", example_settings())
    write(a, records("CPAD", "s1", 0, [True] * 256), records("PPO", "s1", 0, [False] * 256),
          records("CPAD", "s1", 5, [True] * 256), records("PPO", "s1", 5, [False] * 256))
    b = run_log(tmp_path, "b", "GRPO", example_settings())
    assert compare.main(["--a", str(a), "--b", str(b), "--method-a", "PPO"]) == 1
    assert "a record of method 'PPO', but the manifest beside" in capsys.readouterr().err
    assert compare.main(["--a", str(a), "--b", str(b), "--method-a", "CPAD"]) == 0


def test_compare__an_unwritable_plot_is_named_as_the_plot(tmp_path, capsys):
    a = run_log(tmp_path, "a", "CPAD", example_settings())
    plot = tmp_path / "file" / "curves.png"
    (tmp_path / "file").write_text("")
    assert compare.main(["--a", str(a), "--b", str(a), "--plot", str(plot)]) == 1
    assert capsys.readouterr().err.startswith(f"error: --plot {plot}: cannot be written, since {tmp_path / 'file'}")


# --- 28.6-28.8: pipes, locks, mixed sets, releases ------------------------------------------

def test_score_into_a_closed_pipe_ends_without_a_traceback(tmp_path):
    log = write(tmp_path / "episodes.jsonl", records("grpo", "s1", 0, [True] * 256))
    done = subprocess.run(f"{sys.executable} -m sokoban_tools score {log} | head -c 1", shell=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    assert done.stdout == "1" and "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


@pytest.mark.parametrize("kind", ["fifo", "/dev/null"])
def test_a_lock_that_is_not_a_file_is_refused_in_one_line(tmp_path, kind):
    if kind == "fifo":
        os.mkfifo(tmp_path / artifacts.LOCK)
    else:
        (tmp_path / artifacts.LOCK).symlink_to("/dev/null")
    with pytest.raises(artifacts.LockError, match="is not a regular file"):
        with artifacts.locked([tmp_path]):
            pass


def test_a_lock_this_user_cannot_open_is_never_run_without(tmp_path, monkeypatch):
    (tmp_path / artifacts.LOCK).write_text("4242\n")
    opened = os.open

    def refused(path, flags, *mode):  # what a lock of another user, mode 0600, does to this one (not root)
        if str(path).endswith(artifacts.LOCK):
            raise PermissionError(13, "Permission denied")
        return opened(path, flags, *mode)

    monkeypatch.setattr(artifacts.os, "open", refused)
    with pytest.raises(artifacts.LockError, match="cannot be opened \\(Permission denied\\)"):
        with artifacts.locked([tmp_path]):
            pass


def test_a_folder_with_a_publish_journal_is_refused_by_every_reader_of_its_data(tmp_path):
    copy = tmp_path / "fairness"
    shutil.copytree(REPO / "fairness", copy, ignore=shutil.ignore_patterns("train.jsonl"))
    assert len(load_validation(copy / "evaluation.jsonl")) == 256
    (copy / artifacts.JOURNAL).write_text('{"command": "selection", "files": []}')  # killed between renames
    with pytest.raises(sokoban_published.ChecksumError, match="may be of a mixed set: .* reproduce"):
        load_validation(copy / "evaluation.jsonl")


def test_reproduce_new_release_reruns_the_steps_after_the_pin_in_a_new_process(monkeypatch, tmp_path):
    calls, children = [], []
    monkeypatch.setattr(artifacts, "REPRODUCED_DIRECTORIES", (tmp_path,))
    monkeypatch.setattr(command_line, "run", lambda name, options: calls.append(name) or 0)
    monkeypatch.setattr(artifacts, "clear_interrupted_writes", lambda directories: [])
    from sokoban_tools.pipeline import release

    pinned = release.pinned_of(REPO)
    monkeypatch.setattr(release, "pinned_of", lambda repo: replace(pinned, version="9.9.9"))  # the card pinned it
    monkeypatch.setattr(command_line.subprocess, "run",
                        lambda argv, cwd: children.append(argv[3:]) or SimpleNamespace(returncode=0))
    assert command_line.reproduce_command(["--new-release"]) == 0
    assert calls == list(command_line.STEPS)
    assert children == [["example"], ["results"], ["card"]]  # the manifests and the card with the new release


_UNCACHED = '''
sys.path.insert(0, ARGS["repo"])
from omegaconf import OmegaConf
from sokoban_tools.integrations.verl_agent import hooks

config = OmegaConf.create(ARGS["config"])
report(attempt(lambda: hooks.make_fair_envs(config, lambda *args: None, {"num_cpus": 0.1})))
'''


def test_make_fair_envs__an_uncached_revision_offline_writes_nothing(tmp_path):
    from omegaconf import OmegaConf
    from venvs import offline_env, run_client

    config = OmegaConf.to_container(fair_config(tmp_path, **{"env.fairness_boards": None,
                                                             "env.fairness_revision": "abc123"}))
    result = run_client(sys.executable, _UNCACHED, {"repo": str(REPO), "config": config},
                        env=offline_env(tmp_path / "hf-home"))
    [error, *_] = result["error"]
    assert error["type"] == "BoardsNotFound" and "at revision 'abc123'" in error["message"]
    assert not (tmp_path / "run").exists()  # neither the log's folder nor its manifest
