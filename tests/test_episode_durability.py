"""The episode log is synced to disk where a run is made durable, not after every record, and a
writer killed between syncs leaves a log that reads (``test_train.py`` kills a training run and
resumes it to the bytes of a run never stopped)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from unavailable import unavailable

from sokoban_tools.records.episodes import episode_writer, read_episodes, side_files
from sokoban_tools.records.tasks import load_validation

WRITER = r"""
import sys
from sokoban_tools.records.episodes import EpisodeRecord, episode_writer
writer = episode_writer(sys.argv[1])
number = 0
while True:  # one record an append, never synced, until killed
    number += 1
    writer.append([EpisodeRecord("m", "0", "training", number, f"train-{number:05d}", False, 15, -1.5, None,
                                 "U" * 15)])
    if number == 500:
        print("written", flush=True)
"""


def test_a_writer_killed_between_syncs_leaves_every_appended_record_readable(tmp_path):
    log = tmp_path / "killed.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    with subprocess.Popen([sys.executable, "-c", WRITER, str(log)], env=env, stdout=subprocess.PIPE,
                          text=True) as writer:
        assert writer.stdout.readline() == "written\n"  # 500 records appended, none synced
        os.kill(writer.pid, signal.SIGKILL)
    assert writer.returncode == -signal.SIGKILL
    with episode_writer(log) as again:  # the next run: a torn last line, if any, is set aside
        again.set_aside("torn-line", keep=lambda record: True)
    records = read_episodes(log)
    assert len(records) >= 500 and [r.update for r in records] == list(range(1, len(records) + 1))
    assert all(reason == "torn-line" for _, _, reason in side_files(log))


@pytest.mark.parametrize("vector_id", ["SokobanFairness-v1", "SokobanFairnessVector-v1"])
def test_a_validation_pass_is_synced_when_a_share_of_it_ends_not_once_a_record(tmp_path, monkeypatch, vector_id):
    try:
        import gymnasium

        import sokoban_tools.integrations.gymnasium_env  # noqa: F401  registers the ids
    except ImportError:
        unavailable("gymnasium is not installed (pip install -e '.[test]')")
    synced, real_fsync = [], os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    log = tmp_path / "pass.jsonl"
    envs = gymnasium.make_vec(vector_id, num_envs=16, split="validation", episode_log=log, update=7)
    envs.reset(seed=0)
    for _ in range(16 * 16):  # no-ops: each of the 16 boards of a share ends at the horizon, 16 steps with its reset
        envs.step(np.zeros(16, dtype=np.int64))
    records = read_episodes(log)
    assert sorted(r.task_id for r in records) == sorted(row.task_id for row in load_validation())
    at_end = synced.count(str(log))
    assert 1 <= at_end <= 16  # each environment's share synced when it is in; not once a record (256)
    envs.close()
    assert synced.count(str(log)) <= at_end + 1  # and at close, if anything came after
