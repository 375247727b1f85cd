"""The results table: every committed entry passes the leaderboard's checks, and each hand edit
of an entry (a won flipped, a record dropped, a board swapped, a manifest setting changed) is
refused with a message naming it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import REPO
from sokoban_tools.evaluation import leaderboard
from sokoban_tools.evaluation.leaderboard import ENTRY, LOG, MANIFEST, EntryRefused, add_entry, load_entry
from sokoban_tools.evaluation.scoring import BoardSet
from sokoban_tools.evaluation.stats import exact_interval, holm_adjusted
from sokoban_tools.records.rows import DataError

RESULTS = REPO / "results"
ENTRIES = sorted(path.name for path in RESULTS.iterdir() if path.is_dir() and not path.name.startswith("."))


@pytest.fixture(scope="module")
def boards():
    return BoardSet.load(REPO / "fairness" / "evaluation.jsonl")


@pytest.mark.parametrize("name", ENTRIES)
def test_every_committed_entry_passes_every_check_of_the_leaderboard(name, boards):
    entry = load_entry(RESULTS / name, boards)  # raises, naming the entry and why, on any failure
    assert entry.verification.verified == len(boards.task_ids) and entry.verification.unverified == 0


def test_the_leaderboard_ranks_the_committed_entries_and_refuses_none(capsys):
    assert leaderboard.main([str(RESULTS)]) == 0
    out = capsys.readouterr().out
    assert "REFUSED" not in out and all(name in out for name in ENTRIES)
    report = leaderboard.leaderboard(RESULTS, REPO / "fairness" / "evaluation.jsonl")
    names = [row["entry"] for row in report["entries"]]
    assert names[0] == "optimal" and report["entries"][0]["success"] == 1.0 and report["entries"][0]["vs_best"] is None
    successes = [row["success"] for row in report["entries"]]
    assert successes == sorted(successes, reverse=True)
    random = next(row for row in report["entries"] if row["entry"] == "random-policy")
    assert random["vs_best"]["p_holm"] < 1e-10 and not random["vs_best"]["indistinguishable"]
    low, high = random["ci95"]  # the random policy's exact expectation lies in its exact interval
    expected = json.loads((REPO / "fairness" / "baselines.json").read_text())
    assert low <= expected["splits"]["validation"]["overall"]["moves_1_4"]["success"]["float"] <= high
    assert {d["key"] for d in report["settings_differ"]} >= {"evaluation.before_training"}


def tampered(tmp_path: Path, edit) -> Path:
    """A copy of the results folder whose ``random-policy`` entry ``edit`` changed by hand."""
    copy = tmp_path / "results"
    shutil.copytree(RESULTS, copy, ignore=shutil.ignore_patterns(".*"))
    edit(copy / "random-policy")
    return copy


def _lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / LOG).read_text().splitlines()]


def _write(folder: Path, rows: list[dict]) -> None:
    (folder / LOG).write_text("".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows))


def flip_won(folder: Path) -> None:
    rows = _lines(folder)
    lost = next(i for i, row in enumerate(rows) if not row["won"])
    rows[lost]["won"] = True
    _write(folder, rows)


def drop_record(folder: Path) -> None:
    rows = _lines(folder)
    _write(folder, rows[:100] + rows[101:])  # one board's record, from the middle


def swap_boards(folder: Path) -> None:
    """Two records exchange their boards: the pass stays complete, the claims do not."""
    rows = _lines(folder)
    won, lost = next(i for i, r in enumerate(rows) if r["won"]), next(i for i, r in enumerate(rows) if not r["won"])
    rows[won]["task_id"], rows[lost]["task_id"] = rows[lost]["task_id"], rows[won]["task_id"]
    _write(folder, rows)


def change_setting(folder: Path) -> None:
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["settings"]["decoding.validation.temperature"] = 0.0
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def relabel_run(folder: Path) -> None:
    _write(folder, [{**row, "run": "seed-9"} for row in _lines(folder)])


def break_manifest(folder: Path) -> None:
    (folder / MANIFEST).write_text("{broken\n")


def point_boards_elsewhere(folder: Path) -> None:
    """The submitter's run read its boards from a folder of their own machine."""
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["boards"] = {"folder": "/home/someone/sokoban-fairness"}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


@pytest.mark.parametrize("edit, named", [
    (flip_won, r"random-policy/episodes\.jsonl:\d+: the record says won=true, .* gives won=false"),
    (drop_record, r"random-policy/episodes\.jsonl: an incomplete validation pass in lines 1–255: .* misses 1 of the "
                  r"256 validation boards \(eval-\d+\); the pass was complete when the entry was added .*its record "
                  r"was removed .* since: restore the file"),
    (swap_boards, r"random-policy/episodes\.jsonl:\d+: the record says won=\w+, .* on board eval-\d+ gives"),
    (change_setting, r"random-policy/episodes\.jsonl\.manifest\.json: setting decoding\.validation\.temperature "
                     r"is 0\.0, but the entry was submitted with null"),
    (relabel_run, r"random-policy/episodes\.jsonl: changed since it was submitted"),
    (break_manifest, r"random-policy/episodes\.jsonl\.manifest\.json: .*JSON"),
    (point_boards_elsewhere, r"random-policy/episodes\.jsonl\.manifest\.json: changed since it was submitted"),
])
def test_an_entry_edited_by_hand_is_refused_naming_the_change_and_the_rest_are_ranked(tmp_path, capsys, edit, named):
    results = tampered(tmp_path, edit)
    assert leaderboard.main([str(results)]) == 1
    out = capsys.readouterr().out
    [refusal] = [line for line in out.splitlines() if line.startswith("REFUSED")]
    assert refusal.startswith("REFUSED random-policy: ")
    assert re.search(named, refusal), refusal
    assert "optimal" in out and "path-follower" in out  # the others are still ranked


def test_add_writes_an_entry_the_leaderboard_accepts_and_refuses_a_bad_log_leaving_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    killed = results / ".staging-follower.k1ll3d"  # what an add stopped before its rename leaves
    killed.mkdir(parents=True)
    (killed / LOG).write_text("{")
    log = REPO / "examples" / "episodes" / "path-follower.jsonl"
    with pytest.raises(DataError, match="validation passes match; choose one"):
        add_entry(results, "follower", log, "none", "tests", "docs/results.md", "2026-12-02")
    folder = add_entry(results, "follower", log, "none", "tests", "docs/results.md", "2026-12-02",
                       run="seed-1", update=10)
    assert sorted(path.name for path in folder.iterdir()) == sorted([LOG, MANIFEST, ENTRY])
    assert leaderboard.main([str(results)]) == 0
    damaged = tmp_path / "damaged.jsonl"
    rows = _lines(folder)
    rows[0]["won"] = not rows[0]["won"]
    damaged.write_text("".join(json.dumps(row) + "\n" for row in rows))
    shutil.copy(folder / MANIFEST, tmp_path / (damaged.name + ".manifest.json"))
    with pytest.raises(DataError, match="the record says"):
        add_entry(results, "damaged", damaged, "none", "tests", "docs/results.md", "2026-12-02")
    assert sorted(path.name for path in results.iterdir()) == ["follower"]  # nothing left behind
    assert f"removed {killed}, the staging folder of an add that was stopped" in capsys.readouterr().err


def test_an_entry_file_with_a_missing_or_wrong_key_is_refused_by_name(tmp_path, boards):
    results = tampered(tmp_path, lambda folder: None)
    info = json.loads((results / "optimal" / ENTRY).read_text())
    del info["link"]
    (results / "optimal" / ENTRY).write_text(json.dumps(info))
    with pytest.raises(EntryRefused, match=r"missing \['link'\]"):
        load_entry(results / "optimal", boards)


def test_a_record_deleted_from_an_evaluate_entry_is_named_as_missing_with_its_board_not_as_a_stopped_evaluate(
        tmp_path, capsys):
    copy = tmp_path / "results"
    shutil.copytree(RESULTS / "smollm2-135m-text", copy / "smollm2-135m-text")
    rows = _lines(copy / "smollm2-135m-text")
    _write(copy / "smollm2-135m-text", rows[:99] + rows[100:])
    assert leaderboard.main([str(copy)]) == 1
    [refusal] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("REFUSED")]
    assert f"misses 1 of the 256 validation boards ({rows[99]['task_id']})" in refusal
    assert "episodes.jsonl: an incomplete validation pass in lines 1–255:" in refusal
    assert "its record was removed" in refusal
    assert "--resume" not in refusal and "evaluate stopped" not in refusal


def test_add_of_a_pass_missing_a_board_gives_the_fix_of_the_run_that_wrote_it_not_of_a_submitted_entry(tmp_path):
    log = tmp_path / "cut.jsonl"  # the random policy's pass, one board short: never a complete entry
    rows = _lines(RESULTS / "random-policy")
    log.write_text("".join(json.dumps(row) + "\n" for row in rows[:-1]))
    shutil.copy(RESULTS / "random-policy" / MANIFEST, tmp_path / (log.name + ".manifest.json"))
    with pytest.raises(DataError, match=f"misses 1 of the 256 validation boards \\({rows[-1]['task_id']}\\); a run "
                                        f"interrupted during validation") as refused:
        add_entry(tmp_path / "results", "cut", log, "none", "tests", "docs/results.md", "2026-12-02")
    assert "was complete when the entry was added" not in str(refused.value)


def test_score_compare_and_the_leaderboard_give_one_pass_one_interval(capsys):
    from sokoban_tools.evaluation import compare, score

    log = RESULTS / "random-policy" / LOG
    report = leaderboard.leaderboard(RESULTS, REPO / "fairness" / "evaluation.jsonl")
    ranked = next(row for row in report["entries"] if row["entry"] == "random-policy")
    [scored] = score.score([log])["groups"]
    [compared] = compare.compare([log], [RESULTS / "optimal" / LOG])["updates"]
    assert ranked["ci95"] == scored["ci95"] == compared["ci95_a"] == list(exact_interval(56, 256))
    assert report["interval"] == score.score([log])["interval"] == "exact (Clopper-Pearson) 95% interval"
    for stratum, entry in ranked["by_stratum"].items():
        assert entry["ci95"] == scored["by_stratum"][stratum]["ci95"] == compared["by_stratum"][stratum]["ci95_a"]


def test_the_leaderboard_shows_each_entrys_answers_that_were_no_move_costs_per_episode_and_verification(capsys):
    report = leaderboard.leaderboard(RESULTS, REPO / "fairness" / "evaluation.jsonl")
    rows = {row["entry"]: row for row in report["entries"]}
    text_model = rows["smollm2-135m-text"]
    moves = "".join(json.loads(line)["moves"] for line in (RESULTS / "smollm2-135m-text" / LOG).read_text().splitlines())
    assert text_model["turns"] == len(moves) and text_model["no_move_share"] == moves.count("0") / len(moves)
    costs = json.loads((RESULTS / "smollm2-135m-text" / MANIFEST).read_text())["costs"]
    assert text_model["requests_per_episode"] == costs["requests"]["value"] / 256
    assert text_model["prompt_tokens_per_episode"] == costs["prompt_tokens"]["value"] / 256
    assert text_model["completion_tokens_per_episode"] == costs["completion_tokens"]["value"] / 256
    assert rows["optimal"]["no_move_share"] == 0.0 and rows["optimal"]["requests_per_episode"] is None
    text = leaderboard.render(report)
    [line] = [line for line in text.splitlines() if line.startswith("smollm2-135m-text ")]
    assert re.search(rf"{text_model['submitted_by']} +{len(moves):,} +{text_model['no_move_share']:.1%} +"
                     rf"{costs['requests']['value'] / 256:,.1f} +{costs['prompt_tokens']['value'] / 256:,.0f} \+ "
                     rf"{costs['completion_tokens']['value'] / 256:,.0f} +256/256: won, actions, return", line), line
    assert "A replay proves a log consistent with the boards and the rules, not who played it" in text
    page = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    assert line in page and "**Not a move**" in page  # the results page carries the columns, the card stays narrow
    card_results = (REPO / "README.md").read_text(encoding="utf-8").split("\n## Results\n", 1)[1].split("\n## ", 1)[0]
    assert "| Entry | Success [exact 95% CI] | vs best (Holm p) |" in card_results


def test_exact_interval_and_holm_correction_match_their_definitions():
    assert exact_interval(0, 10)[0] == 0.0 and exact_interval(0, 10)[1] == pytest.approx(0.30849710)
    assert exact_interval(5, 10) == pytest.approx((0.18708603, 0.81291397))
    assert exact_interval(10, 10) == pytest.approx((0.69150289, 1.0))
    assert holm_adjusted([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])


def test_an_entry_under_another_reward_scheme_is_ranked_with_its_returns_marked_not_replayed(tmp_path, capsys):
    def resubmit_with_vagens_rewards(folder: Path) -> None:
        manifest = json.loads((folder / MANIFEST).read_text())
        manifest["settings"].update({"reward.step": 0.1, "reward.box_on_target": 0.0, "reward.solved": 1.0})
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        info = json.loads((folder / ENTRY).read_text())
        (folder / ENTRY).write_bytes(leaderboard.entry_document(
            info["model"], info["method"], info["submitted_by"], info["link"], info["date"],
            (folder / LOG).read_bytes(), (folder / MANIFEST).read_bytes()))

    results = tampered(tmp_path, resubmit_with_vagens_rewards)
    assert leaderboard.main([str(results)]) == 0
    out = capsys.readouterr().out
    assert "Returns not replayed (the manifest declares another reward scheme" in out and "random-policy." in out
    differs = next(line for line in out.splitlines() if line.strip().startswith("reward.step:"))
    values = dict(pair.rsplit(" ", 1) for pair in differs.split(":", 1)[1].strip().split(", "))
    assert values["random-policy"] == "0.1" and values["optimal"] == values["path-follower"] == "-0.1"
