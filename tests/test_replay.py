"""Replaying a record's moves on its stored board checks what it claims: outcome, actions, return."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from conftest import REPO
from sokoban_tools.evaluation.replay import check_record, replay, rewards_replayable, verify_log
from sokoban_tools.pipeline.example_policies import example_manifest
from sokoban_tools.records.episodes import EpisodeRecord, episode_writer, moves_of
from sokoban_tools.records.manifest import write_manifest
from sokoban_tools.records.rows import DataError
from sokoban_tools.records.tasks import load_validation
from sokoban_tools.rules.board import from_lurd
from sokoban_published import PUBLISHED_FILES

DIGEST = PUBLISHED_FILES["fairness/evaluation.jsonl"]["sha256"]


@pytest.fixture(scope="module")
def rows():
    return load_validation()


def solved(row, **changes) -> EpisodeRecord:
    """The record of playing ``row``'s stored shortest solution."""
    moves = moves_of(from_lurd(row.shortest_solution))
    fields = dict(method="oracle", run="0", phase="validation", update=0, task_id=row.task_id, won=True,
                  actions=len(moves), episode_return=replay(row.board, moves).episode_return,
                  evaluation_sha256=DIGEST, moves=moves)
    fields.update(changes)
    return EpisodeRecord(**fields)


def test_replaying_every_stored_solution_wins_with_the_runtimes_return(rows):
    for row in rows:
        played = replay(row.board, moves_of(from_lurd(row.shortest_solution)))
        assert played.won and played.problem is None
        assert played.actions == row.shortest_solution_length
        assert played.episode_return == pytest.approx(-0.1 * played.actions + 11)
        assert check_record(solved(row), row.board) is None


def test_an_unparseable_answer_spends_a_turn_and_a_penalty_but_no_action(rows):
    row = rows[0]
    moves = "0" + moves_of(from_lurd(row.shortest_solution))
    played = replay(row.board, moves)
    assert (played.won, played.actions) == (True, row.shortest_solution_length)
    assert played.episode_return == pytest.approx(-0.1 * (played.actions + 1) + 11)


def test_a_flipped_won_a_changed_count_or_return_and_moves_after_the_end_are_named(rows):
    row = rows[3]
    record = solved(row)
    flipped = check_record(replace(record, won=False), row.board)
    assert f"board {row.task_id}" in flipped and "says won=false" in flipped and "gives won=true" in flipped
    assert "return=" in check_record(replace(record, episode_return=record.episode_return + 1), row.board)
    extra = record.moves + "U"
    longer = check_record(replace(record, moves=extra, actions=record.actions + 1), row.board)
    assert f"move {len(extra)} of {len(extra)} comes after the episode was over" in longer
    lost = "0" * 16
    assert "16 turns, more than the action horizon of 15" in check_record(
        replace(record, won=False, moves=lost, actions=0, episode_return=-1.6), row.board)


def test_returns_are_not_replayed_for_a_run_declaring_another_reward_scheme(rows):
    row = rows[0]
    vagen_like = replace(solved(row), episode_return=10.5)  # VAGEN's format + success rewards
    assert check_record(vagen_like, row.board, check_return=False) is None
    assert "return=" in check_record(vagen_like, row.board)
    manifest = example_manifest("random", (0,), 0, 0)
    assert rewards_replayable(manifest) and rewards_replayable(None)
    manifest["settings"]["reward.step"] = 0.5
    assert not rewards_replayable(manifest)


def test_verify_log_names_the_file_line_and_board_of_a_record_the_replay_contradicts(rows, tmp_path):
    log = tmp_path / "run.jsonl"
    records = [solved(row) for row in rows]
    records[7] = replace(records[7], won=False)
    with episode_writer(log) as writer:
        writer.append(records)
    with pytest.raises(DataError, match=rf"run\.jsonl:8: the record says won=false.*board {rows[7].task_id}"):
        verify_log(log)


def test_verify_log_counts_records_without_moves_as_unverified_and_uses_the_manifests_horizon(rows, tmp_path):
    log = tmp_path / "run.jsonl"
    with episode_writer(log) as writer:
        writer.append([solved(row) for row in rows[:10]] + [replace(solved(rows[10]), moves=None)])
    write_manifest(log, example_manifest("oracle", (0,), 0, 0))
    found = verify_log(log)
    assert (found.verified, found.unverified) == (10, 1) and "UNVERIFIED" in found.describe()



def test_score_verify_and_compare_replay_every_episode_and_refuse_a_contradicted_record(tmp_path, capsys):
    from sokoban_tools.evaluation import compare, score

    entry = REPO / "results" / "random-policy"
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    lines = (entry / "episodes.jsonl").read_text().splitlines(keepends=True)
    good.write_text("".join(lines))
    lost = next(i for i, line in enumerate(lines) if '"won":false' in line)
    bad.write_text("".join(lines[:lost] + [lines[lost].replace('"won":false', '"won":true')] + lines[lost + 1:]))
    for log in (good, bad):
        shutil.copyfile(entry / "episodes.jsonl.manifest.json", tmp_path / f"{log.name}.manifest.json")
    assert score.score([good], verify=True)["verification"] == {"verified": 256, "unverified": 0,
                                                                "returns_unchecked": []}
    assert score.main([str(bad), "--verify"]) == 1
    err = capsys.readouterr().err
    assert f"bad.jsonl:{lost + 1}: the record says won=true" in err and "gives won=false" in err
    assert score.main([str(bad)]) == 0  # without --verify the claim is scored as it stands
    capsys.readouterr()
    assert compare.main(["--a", str(good), "--b", str(bad), "--method-b", "random", "--no-manifest"]) == 1
    assert f"bad.jsonl:{lost + 1}: the record says won=true" in capsys.readouterr().err
