"""Ctrl-C in ``train``: one line naming the command that continues the run, no traceback; and the
command it names does continue it."""

from __future__ import annotations

import signal
import subprocess

from test_train import ENV, command, training_started, wait_for


def test_ctrl_c_in_train_is_one_line_naming_the_same_command_which_then_continues(sb3, tmp_path):
    log = tmp_path / "stopped.jsonl"
    options = ("--method", "ppo", "--seed", "5", "--steps", "4096", "--eval-every", "2048", "--log", str(log))
    run = subprocess.Popen(command(*options), env=ENV, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    wait_for(lambda: training_started(log) or run.poll() is not None, 600, "training to start")
    run.send_signal(signal.SIGINT)  # what Ctrl-C sends
    out, err = run.communicate(timeout=600)
    assert run.returncode == 130, (out, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    last = err.strip().splitlines()[-1]  # (the test install's gym prints a notice at import; a user's has no gym)
    assert last.startswith("interrupted: the same command continues from the last validation pass's checkpoint")
    assert err.count("interrupted:") == 1
    named = last.split(": python -m sokoban_tools train ", 1)[1]
    assert named.split() == list(options) + ["--quiet"]
    again = subprocess.run(command(*options), env=ENV, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr
    assert "trained PPO seed 5" in again.stdout
