"""Records set aside beside a log, never deleted; the schedule score checks; boards read where the run read them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from sokoban_published import PUBLISHED_FILES

from conftest import DATA_DIR
from sokoban_tools.evaluation.schedule import expected_passes
from sokoban_tools.evaluation.score import render, score
from sokoban_tools.records.boards import BoardsNotFound
from sokoban_tools.records.episodes import (EpisodeRecord, episode_writer, next_aside_number, read_episodes,
                                            side_files)
from sokoban_tools.records.manifest import ManifestError, manifest_path, new_manifest, write_manifest
from sokoban_tools.records.rows import DataError, read_rows
from test_manifest import example_settings

DIGEST = PUBLISHED_FILES["fairness/evaluation.jsonl"]["sha256"]
IDS = [row.task_id for row in read_rows(DATA_DIR / "evaluation.jsonl")]


def validation(update: int, ids=IDS, run="s1") -> list[EpisodeRecord]:
    return [EpisodeRecord("GRPO", run, "validation", update, task, i % 3 == 0, 4, 1.0, DIGEST)
            for i, task in enumerate(ids)]


def training(update: int, n: int = 4) -> list[EpisodeRecord]:
    return [EpisodeRecord("GRPO", "s1", "training", update, f"train-{i:05d}", True, 3, 10.7, None) for i in range(n)]


def test_set_aside_moves_rejected_records_and_a_torn_line_to_a_numbered_side_file_keeping_order(tmp_path):
    log = tmp_path / "episodes.jsonl"
    writer = episode_writer(log)
    assert episode_writer(str(log)) is writer  # one writer per log in a process
    writer.append(training(1) + training(2) + training(3))
    before = log.read_text()
    with log.open("a") as handle:
        handle.write(training(4)[0].to_line()[:30])  # a killed append
    moved = writer.set_aside("resume-from-2", keep=lambda r: r.update <= 2)
    assert (moved.records, moved.torn, moved.path.name) == (4, True, "episodes.jsonl.aside-1.resume-from-2.jsonl")
    assert "moved 4 record(s) and a torn last line" in moved.notice(log) and moved.path.name in moved.notice(log)
    assert log.read_text() == "".join(line + "\n" for line in before.splitlines()[:8])  # the kept lines, unchanged
    assert moved.path.read_text() == "".join(line + "\n" for line in before.splitlines()[8:]) + \
        training(4)[0].to_line()[:30] + "\n"  # nothing deleted: the torn line too
    assert writer.set_aside("restart", keep=lambda r: True) is None  # nothing to move
    again = writer.set_aside("restart")
    assert again.path.name == "episodes.jsonl.aside-2.restart.jsonl" and log.read_text() == ""
    assert [(p.name, n, reason) for p, n, reason in side_files(log)] == [
        ("episodes.jsonl.aside-1.resume-from-2.jsonl", 1, "resume-from-2"), ("episodes.jsonl.aside-2.restart.jsonl", 2, "restart")]
    assert next_aside_number(log) == 3


def test_set_aside_refuses_a_damaged_complete_line_before_writing_anything(tmp_path):
    log = tmp_path / "episodes.jsonl"
    log.write_text(training(1)[0].to_line() + "\n{not json}\n")
    with pytest.raises(DataError, match=r"episodes\.jsonl:2: not a JSON object"), episode_writer(log) as writer:
        writer.set_aside("restart")
    assert side_files(log) == [] and log.read_text().endswith("{not json}\n")


def test_score_names_an_incomplete_and_a_repeated_pass_for_what_they_are(tmp_path):
    cut = tmp_path / "cut.jsonl"  # the run trained on after the pass: it will never be finished
    cut.write_text("".join(r.to_line() + "\n" for r in validation(0) + validation(2, IDS[:100]) + training(3)))
    with pytest.raises(DataError, match="an incomplete validation pass in lines 257–356: .*update=2 misses 156 .*interrupted"):
        score([cut])
    early = tmp_path / "early.jsonl"  # not the run's last pass either
    early.write_text("".join(r.to_line() + "\n" for r in validation(0, IDS[:100]) + validation(2)))
    with pytest.raises(DataError, match="an incomplete validation pass in lines 1–100: .*update=0 misses 156"):
        score([early])
    twice = tmp_path / "twice.jsonl"
    twice.write_text("".join(r.to_line() + "\n" for r in validation(0) + validation(0)))
    with pytest.raises(DataError, match="a repeated validation pass; the log holds two runs' passes.*experiment_name"):
        score([twice])


def test_expected_passes_follow_verl_agents_schedule():
    settings = {"evaluation.before_training": True, "evaluation.frequency": 5, "update_budget.total_training_steps": 12}
    assert expected_passes(settings, 12, []) == ({0, 5, 10, 12}, set())
    assert expected_passes(settings, 7, [3]) == ({0, 5}, {3})  # stopped at 7; resumed at 3 validates there
    unknown = {**settings, "update_budget.total_training_steps": None, "evaluation.before_training": False}
    assert expected_passes(unknown, 12, []) == ({5, 10}, {12})  # the last update's pass may be the final one
    assert expected_passes({**settings, "evaluation.frequency": -1}, 12, []) == ({0}, set())
    undeclared = {**settings, "evaluation.before_training": None}  # a pass at 0 neither required nor refused
    assert expected_passes(undeclared, 12, []) == ({5, 10, 12}, {0})


def test_a_manifest_that_declares_no_schedule_is_not_held_to_one(tmp_path):
    log = tmp_path / "episodes.jsonl"  # one pass at update 100, as the Gymnasium and GEM pages log
    write_manifest(log, new_manifest("GRPO", example_settings(**{
        "evaluation.before_training": None, "evaluation.frequency": None})))
    log.write_text("".join(r.to_line() + "\n" for r in validation(100)))
    [entry] = score([log])["schedule"]
    assert entry["checked"] is False and "missing" not in entry
    text = render(score([log]))
    assert "MISSING" not in text and "UNEXPECTED" not in text
    assert "schedule not checked: its run manifest declares none (evaluation.before_training and " \
           "evaluation.frequency are null)" in text


def test_score_reports_a_missing_and_an_unexpected_pass_and_the_history_from_side_files(tmp_path):
    log = tmp_path / "episodes.jsonl"
    write_manifest(log, new_manifest("GRPO", example_settings(**{
        "evaluation.frequency": 2, "update_budget.total_training_steps": 4, "evaluation.before_training": True})))
    records = validation(0) + training(1) + training(2) + validation(3) + training(3) + training(4) + validation(4)
    log.write_text("".join(r.to_line() + "\n" for r in records))
    (tmp_path / "episodes.jsonl.aside-1.resume-from-2.jsonl").write_text("")
    report = score([log])
    [entry] = report["schedule"]
    assert (entry["missing"], entry["unexpected"], entry["resumed_from"]) == ([2], [3], [2])
    text = render(report)
    assert "MISSING validation pass at update 2" in text and "UNEXPECTED validation pass" in text
    assert "resumed from update 2" in text
    # without a manifest, the schedule is not checked, and the report says so
    bare = tmp_path / "bare.jsonl"
    bare.write_text(log.read_text())
    assert score([bare])["schedule"][0]["checked"] is False and "not checked" in render(score([bare]))


def test_score_reads_the_boards_where_the_manifest_says_the_run_read_them(tmp_path):
    log = tmp_path / "episodes.jsonl"
    log.write_text("".join(r.to_line() + "\n" for r in validation(0)))
    copy = tmp_path / "copy"
    manifest = new_manifest("GRPO", example_settings(), boards={"folder": str(copy)})
    manifest_path(log).write_text(json.dumps(manifest))
    with pytest.raises(BoardsNotFound, match=f"board folder {copy} does not exist"):
        score([log])  # read from the recorded folder, not the clone nor the Hub
    (copy / "fairness").mkdir(parents=True)
    (copy / "fairness" / "evaluation.jsonl").write_bytes((DATA_DIR / "evaluation.jsonl").read_bytes())
    assert score([log])["groups"][0]["boards"] == 256
    with pytest.raises(ManifestError, match="boards must be"):
        new_manifest("GRPO", example_settings(), boards={"folder": ""})
    assert read_episodes(log) == validation(0)


HOLDER = """
import sys
from sokoban_tools.records.episodes import episode_writer
writer = episode_writer(sys.argv[1])
print("held", flush=True)
sys.stdin.read()
"""


def test_score_scores_the_complete_passes_of_a_run_validating_now_and_names_the_pass_in_progress(tmp_path):
    log = tmp_path / "live.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", HOLDER, str(log)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "held\n"
        log.write_text("".join(r.to_line() + "\n" for r in validation(0) + training(1) + training(2) +
                               validation(2, IDS[:100])))  # the run is writing its pass at update 2
        report = score([log])
        assert [g["update"] for g in report["groups"]] == [0]
        (live,) = report["in_progress"]
        assert (live["update"], live["boards_logged"], live["boards"]) == (2, 100, 256)
        assert live["writer"].startswith(f"pid {writer.pid} on ")
        assert f"GRPO s1 update 2 (live.jsonl): 100 of 256 boards logged, being written now (pid {writer.pid} " \
            in render(report)
    finally:
        writer.kill()
        writer.wait()
    report = score([log])  # killed while validating: it will resume
    assert [g["update"] for g in report["groups"]] == [0] and report["in_progress"][0]["writer"] is None
    assert "100 of 256 boards logged, cut short: its run stopped while validating" in render(report)
    only = tmp_path / "only.jsonl"  # nothing complete yet: nothing to score
    only.write_text("".join(r.to_line() + "\n" for r in validation(0, IDS[:10])))
    with pytest.raises(DataError, match="update=0 misses 246 of the 256 .*no complete pass to score yet"):
        score([only])
