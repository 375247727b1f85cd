"""One writer per episode log: a second process is refused before it writes, a dead one blocks nothing.

Every writer takes the log's lock through :func:`sokoban_tools.records.episodes.episode_writer`:
here a holder process keeps it while ``evaluate``, Gymnasium and the verl-agent hooks try
the same log, then is killed with SIGKILL, after which the log is free again and the
temporaries the dead writer left beside the log are removed by the next one, with a notice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from sokoban_tools.records.episodes import EpisodeRecord, LogInUse, episode_writer, lock_path, read_episodes
from sokoban_tools.records.manifest import manifest_path

HOLDER = """
import sys
from sokoban_tools.records.episodes import episode_writer
writer = episode_writer(sys.argv[1])
print("held", flush=True)
sys.stdin.read()
"""


def record(task_id: str = "train-00001") -> EpisodeRecord:
    return EpisodeRecord("GRPO", "s1", "training", 1, task_id, True, 3, 10.7, None)


@pytest.fixture
def held(tmp_path):
    """A log whose lock another (live) process holds; that process is killed afterwards."""
    log = tmp_path / "runs" / "episodes.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(log)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        yield log, holder
    finally:
        holder.kill()
        holder.wait()


def test_a_second_writer_is_refused_in_one_line_naming_the_log_and_its_holder_and_a_killed_one_blocks_nothing(held):
    log, holder = held
    with pytest.raises(LogInUse) as refused:
        episode_writer(log)
    message = str(refused.value)
    assert str(log) in message and f"pid {holder.pid} on " in message and "\n" not in message
    assert not log.exists()
    os.kill(holder.pid, signal.SIGKILL)  # no clean-up: the kernel drops the flock
    holder.wait()
    assert lock_path(log).exists()  # the dead holder's file stays, its lock does not
    with episode_writer(log) as writer:
        assert episode_writer(log) is writer  # the process's one writer
        writer.close()  # a second user's close keeps the lock for the first
        assert writer.append([record()]) == 1
    assert not lock_path(log).exists() and read_episodes(log) == [record()]
    with pytest.raises(RuntimeError, match="is closed"):
        writer.append([record()])


def test_the_writer_of_a_log_removes_the_temporaries_a_dead_writer_left_and_says_so(tmp_path, capsys):
    log = tmp_path / "episodes.jsonl"
    dead = [tmp_path / ".episodes.jsonl.k2x_9abc.tmp", tmp_path / ".episodes.jsonl.manifest.json.q1w2e3r4.tmp",
            tmp_path / ".episodes.jsonl.aside-2.restart.jsonl.zzzzzzzz.tmp"]
    others = [tmp_path / ".other.jsonl.k2x_9abc.tmp", tmp_path / ".episodes.jsonl.notes.tmp"]
    for path in dead + others:
        path.write_text("half")
    with episode_writer(log):
        pass
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "removed" in err and all(path.name in err for path in dead)
    assert [path.exists() for path in dead + others] == [False] * 3 + [True] * 2


def test_a_log_in_a_place_no_log_can_be_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "folder.jsonl").mkdir()
    with pytest.raises(ValueError, match=r"folder\.jsonl: is a directory"):
        episode_writer(tmp_path / "folder.jsonl")
    os.mkfifo(tmp_path / "fifo.jsonl")
    with pytest.raises(ValueError, match=r"fifo\.jsonl: is not a regular file"):
        episode_writer(tmp_path / "fifo.jsonl")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["fifo.jsonl", "folder.jsonl"]


def test_evaluate_on_a_log_another_process_writes_is_refused_before_the_server_is_asked(held, capsys):
    from sokoban_tools.integrations.served.evaluate import main as evaluate_main
    from sokoban_tools.integrations.served.demo_model import LoopbackServer, Script

    log, holder = held
    with LoopbackServer(Script("shortest", keep=False)) as server:
        code = evaluate_main(["--base-url", server.base_url, "--model", "loopback-vl", "--log", str(log),
                              "--boards", "2"])
        assert server.requests == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 1 and len(lines) == 1 and f"pid {holder.pid}" in lines[0] and str(log) in lines[0], err
    assert not log.exists() and not manifest_path(log).exists()


def test_quickstart_on_a_log_another_process_writes_is_refused_and_deletes_none_of_its_records(held, capsys):
    from sokoban_tools.integrations.served.quickstart import main as quickstart_main

    log, holder = held
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(record().to_line() + "\n")  # what the holder wrote so far
    assert quickstart_main(["--log", str(log)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and f"pid {holder.pid}" in err and str(log) in err, err
    assert read_episodes(log) == [record()]


def test_gymnasium_and_the_verl_agent_hooks_on_a_log_another_process_writes_are_refused_at_start(held):
    import gymnasium

    from sokoban_tools.integrations.gymnasium_env import ENV_ID
    from sokoban_tools.integrations.verl_agent.resume import open_run
    from sokoban_tools.records.manifest import environment_settings, new_manifest, SETTING

    log, holder = held
    with pytest.raises(LogInUse, match=f"pid {holder.pid}"):
        gymnasium.make(ENV_ID, episode_log=log)
    manifest = new_manifest("GRPO", {**{key: None for key in SETTING}, **environment_settings(),
                                     "update_budget.unit": "updates"})
    with pytest.raises(LogInUse, match=f"pid {holder.pid}"):
        open_run(log, manifest)
    assert not log.exists() and not manifest_path(log).exists()
