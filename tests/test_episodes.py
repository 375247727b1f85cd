"""The episode log a scoring command reads: rows round-trip, and bad rows are refused by line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sokoban_tools.records.episodes import (EPISODE_KEYS, EpisodeRecord, EpisodeTally, actions_of, episode_writer,
                                            moves_of, read_episodes)
from sokoban_tools.records.rows import DataError

DIGEST = "ab" * 32


def record(**changes) -> EpisodeRecord:
    fields = dict(method="GRPO", run="seed-1", phase="validation", update=5, task_id="eval-0001",
                  won=True, actions=7, episode_return=10.3, evaluation_sha256=DIGEST, moves="UR0RDDLU")
    fields.update(changes)
    return EpisodeRecord(**fields)


def test_appended_rows_read_back_equal_and_in_order(tmp_path):
    log = tmp_path / "episodes.jsonl"
    first = [record(task_id="eval-0001"), record(task_id="eval-0002", won=False, episode_return=-1.5)]
    second = [record(phase="training", update=6, task_id="train-00007", evaluation_sha256=None, actions=1, moves="L")]
    with episode_writer(log) as writer:
        assert writer.append(first) == 2
        assert writer.append(second) == 1
    assert read_episodes(log) == first + second
    assert list(json.loads(log.read_text().splitlines()[0])) == list(EPISODE_KEYS)


def test_a_record_with_a_bad_field_cannot_be_made():
    with pytest.raises(ValueError, match="phase must be one of"):
        record(phase="test")
    with pytest.raises(ValueError, match="update must be a non-negative integer"):
        record(update=True)
    with pytest.raises(ValueError, match="validation row must be 64"):
        record(evaluation_sha256=None)
    with pytest.raises(ValueError, match="training row must be null"):
        record(phase="training")
    with pytest.raises(ValueError, match="moves must be a string of the letters 0UDLR"):
        record(moves="UR0RDDLX")
    with pytest.raises(ValueError, match="hold 6 actions 1-4 but actions is 7"):
        record(moves="UR0RDDL")


def test_moves_are_the_actions_in_order_one_letter_each_and_round_trip():
    assert moves_of([1, 4, 4, 2, 0, 3]) == "URRD0L"
    assert actions_of("URRD0L") == [1, 4, 4, 2, 0, 3]
    assert moves_of(actions_of(record().moves)) == record().moves


def test_a_row_of_an_older_log_without_moves_is_read_as_unverified_and_written_back_unchanged(tmp_path):
    log = tmp_path / "old.jsonl"
    line = record().to_line().replace(',"moves":"UR0RDDLU"', "")
    log.write_text(line + "\n")
    [old] = read_episodes(log)
    assert old.moves is None and not old.verifiable and old.to_line() == line


def test_the_tally_ends_at_the_first_done_and_counts_action_0_in_the_moves_and_return_only():
    tally = EpisodeTally()
    for action, reward, done, won in ((1, -0.1, False, False), (0, -0.1, False, False), (4, 10.9, True, True),
                                      (2, -0.1, False, False)):
        tally.add(action, reward, done, won)
    made = tally.record("m", "r", "validation", 0, "eval-0001", DIGEST)
    assert (made.moves, made.actions, made.won) == ("U0R", 2, True)
    assert made.episode_return == pytest.approx(10.7)


@pytest.mark.parametrize("damage, message", [
    (lambda line: line[:-5], "last line has no newline"),
    (lambda line: line.replace('"won":true', '"won":1') + "\n", "won must be true or false"),
    (lambda line: line.replace('"method":"GRPO",', '') + "\n", "keys are"),
    (lambda line: line.replace('"run":"seed-1"', '"run":"seed-1","run":"x"') + "\n", "duplicate key run"),
    (lambda line: line.replace('"return":10.3', '"return":NaN') + "\n", "return must be a finite number"),
    (lambda line: "[1, 2]\n", "not a JSON object"),
])
def test_a_damaged_second_line_is_refused_with_file_and_line(tmp_path, damage, message):
    log = tmp_path / "episodes.jsonl"
    line = record().to_line()
    log.write_text(line + "\n" + damage(line))
    with pytest.raises(DataError, match=rf"episodes\.jsonl:2: .*{message}.*repair or remove"):
        read_episodes(log)


SHORT_WRITE = """
import resource, sys
from sokoban_tools.records.episodes import EpisodeRecord, episode_writer
resource.setrlimit(resource.RLIMIT_FSIZE, (500, resource.RLIM_INFINITY))  # a disk that fills at 500 bytes
records = [EpisodeRecord("GRPO", "seed-1", "training", 1, f"train-{i:05d}", False, 15, -1.5, None) for i in range(10)]
try:
    episode_writer(sys.argv[1]).append(records)
except OSError as err:
    print("refused:", err)
else:
    print("written")
"""


def test_a_write_the_disk_cuts_short_is_an_error_not_records_reported_written(tmp_path):
    log = tmp_path / "episodes.jsonl"
    done = subprocess.run([sys.executable, "-c", SHORT_WRITE, str(log)], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith(f"refused: the episode log {log}: only 500 of "), done.stdout + done.stderr
    assert "its torn last line is then set aside" in done.stdout
    assert log.stat().st_size == 500
