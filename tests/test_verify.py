"""The verification reports: what they attest, that they are reproducible, and that damage is caught.

Damage is done to copies in tmp_path: a moved box, a wrong length, a longer
solution, a duplicate under rotation and flipped bytes must each be reported
with the file and line of the damaged row.
"""

import hashlib
import json

import numpy as np
import pytest

from conftest import DATA_DIR, REPO
from sokoban_render import render_rgb
from sokoban_tools.rules import images
from sokoban_tools.pipeline.verification import verify
from sokoban_tools.rules.board import Board, from_lurd, play, to_lurd
from sokoban_tools.records.rows import encode_row
from sokoban_tools.rules.solver import shortest_solution
from sokoban_tools.rules.symmetry import symmetric_images

TRAIN, POOL, VALIDATION = "train.jsonl", "evaluation-pool-1000.jsonl", "evaluation.jsonl"
REPORTS = ("verification.json", "source-pool-verification.json")
SMALL = {TRAIN: 120, POOL: 80, VALIDATION: 40}  # lines kept in the small copies


@pytest.fixture(scope="module")
def report():
    return json.loads((DATA_DIR / "verification.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def source_report():
    return json.loads((DATA_DIR / "source-pool-verification.json").read_text(encoding="utf-8"))


@pytest.fixture
def small_copy(tmp_path):
    """The first lines of each board file: every board in them passes."""
    for name, count in SMALL.items():
        lines = (DATA_DIR / name).read_bytes().split(b"\n")[:count]
        (tmp_path / name).write_bytes(b"".join(line + b"\n" for line in lines))
    return tmp_path


def rows_of(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def replace_line(path, line_no, new_line):
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[line_no - 1] = new_line
    path.write_text("\n".join(lines), encoding="utf-8")


def row_text(row):
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False)


def board_of(row):
    return Board.from_rooms(row["room_fixed"], row["room_state"])


def test_verify__report_has_one_passing_entry_per_validation_board_in_file_order(report):
    rows = rows_of(DATA_DIR / VALIDATION)
    assert [b["task_id"] for b in report["boards"]] == [r["task_id"] for r in rows]
    assert [b["line"] for b in report["boards"]] == list(range(1, 257))
    for board, row in zip(report["boards"], rows):
        assert board["shortest_solution_length"] == board["bfs_length"] == row["shortest_solution_length"]
        assert board["frames"] == row["shortest_solution_length"] + 1
        assert board["failed"] == []
    totals = report["totals"]
    assert (totals["boards"], totals["passed"], totals["failed"]) == (256, 256, 0)
    assert set(totals["checks"]) == set(verify.CHECKS)
    assert all(c == {"passed": 256, "failed": 0} for c in totals["checks"].values())
    assert report["file"]["sha256"] == hashlib.sha256((DATA_DIR / VALIDATION).read_bytes()).hexdigest()
    assert report["uniqueness"]["distinct_under_symmetry"] == 256


def test_verify__source_report_covers_5000_and_1000_boards_and_uniqueness_across_both(source_report):
    files = source_report["files"]
    assert {name: f["rows"] for name, f in files.items()} == {"train": 5000, "source_pool": 1000}
    for f in files.values():
        assert f["sha256"] == hashlib.sha256((REPO / f["path"]).read_bytes()).hexdigest()
        assert f["totals"]["failed"] == 0 and f["totals"]["passed"] == f["rows"]
    assert source_report["uniqueness"]["boards"] == 6000
    assert source_report["uniqueness"]["distinct_under_symmetry"] == 6000
    assert source_report["totals"]["failed"] == 0 and source_report["failures"] == []


def test_verify__a_boards_frame_digest_is_recomputed_from_the_renderer(report):
    row = rows_of(DATA_DIR / VALIDATION)[0]
    board = board_of(row)
    positions = [board] + [after for after, _ in play(board, from_lurd(row["shortest_solution"]))]
    frames = [render_rgb(p.room_fixed, p.room_state()) for p in positions]
    assert all(f.shape == (96, 96, 3) and f.dtype == np.uint8 for f in frames)
    assert report["boards"][0]["frames_sha256"] == hashlib.sha256(b"".join(f.tobytes() for f in frames)).hexdigest()
    digests = b"".join(bytes.fromhex(b["frames_sha256"]) for b in report["boards"])
    assert report["frames_sha256"] == hashlib.sha256(digests).hexdigest()


# That the committed reports are what the command computes, and that no board
# fails, is checked by tests/test_reproduce.py in a fresh process.


def test_verify__two_worker_processes_write_what_one_process_writes(small_copy, monkeypatch):
    monkeypatch.setattr(verify, "BLOCK_ROWS", 16)  # several blocks per file, so order matters
    assert verify.build(small_copy, workers=2) == verify.build(small_copy, workers=1)


def test_verify__an_undamaged_small_copy_passes(small_copy):
    assert verify.main(["--data-dir", str(small_copy)]) == 0
    assert verify.main(["--check", "--data-dir", str(small_copy)]) == 0


def run_damaged(small_copy, capsys):
    code = verify.main(["--data-dir", str(small_copy)])
    return code, capsys.readouterr().err


def test_verify__a_moved_box_is_caught_naming_file_and_line(small_copy, capsys):
    path = small_copy / VALIDATION
    row = rows_of(path)[4]
    board = board_of(row)
    free = [(r, c) for r in range(6) for c in range(6)
            if board.is_open((r, c)) and (r, c) not in (board.player, board.box, board.target)]
    moved = Board(board.room_fixed, board.player, free[0])
    row["room_state"] = [list(r) for r in moved.room_state()]
    row["xsb"] = moved.xsb()
    replace_line(path, 5, row_text(row))
    code, err = run_damaged(small_copy, capsys)
    assert code == 1 and f"{path}:5:" in err


def test_verify__a_wrong_length_field_is_caught_naming_file_and_line(small_copy, capsys):
    path = small_copy / TRAIN
    row = rows_of(path)[10]
    row["shortest_solution_length"] += 1
    replace_line(path, 11, row_text(row))
    code, err = run_damaged(small_copy, capsys)
    assert code == 1 and f"{path}:11:" in err and "shortest_solution_length" in err


def longer_solution(board, actions):
    """A valid solution two actions longer: a step away and back before the stored one."""
    for first, back in ((1, 2), (2, 1), (3, 4), (4, 3)):
        candidate = [first, back] + actions
        try:
            to_lurd(board, candidate)
        except ValueError:
            continue
        if play(board, candidate)[-1][0].is_solved:
            return candidate
    return None


def test_verify__a_solution_that_is_not_shortest_is_caught_by_the_search(small_copy, capsys):
    path = small_copy / POOL
    rows = rows_of(path)
    line_no, longer = next((i, found) for i, row in enumerate(rows, start=1)
                           if (found := longer_solution(board_of(row), from_lurd(row["shortest_solution"]))))
    row = rows[line_no - 1]
    row["shortest_solution"] = to_lurd(board_of(row), longer)
    row["shortest_solution_length"] = len(longer)
    replace_line(path, line_no, row_text(row))
    code, err = run_damaged(small_copy, capsys)
    assert code == 1 and f"{path}:{line_no}:" in err and "shortest_path" in err


@pytest.mark.parametrize("name", [VALIDATION, POOL])
def test_verify__a_duplicate_under_rotation_is_caught_naming_both_lines(small_copy, capsys, name):
    path = small_copy / name
    rows = rows_of(path)
    original = board_of(rows[2])
    turned = Board.from_xsb(symmetric_images(original)[2])  # a quarter turn
    assert turned != original
    victim = rows[20]
    replace_line(path, 21, encode_row(victim["task_id"], victim["seed"], turned, shortest_solution(turned)))
    code, err = run_damaged(small_copy, capsys)
    assert code == 1
    assert f"{path}:21:" in err and "unique_under_symmetry" in err and f"fairness/{name}:3 " in err


def test_verify__a_validation_board_rotated_from_a_training_board_is_caught(small_copy, capsys):
    train_board = board_of(rows_of(small_copy / TRAIN)[7])
    mirrored = Board.from_xsb(symmetric_images(train_board)[1])
    path = small_copy / VALIDATION
    victim = rows_of(path)[12]
    replace_line(path, 13, encode_row(victim["task_id"], victim["seed"], mirrored, shortest_solution(mirrored)))
    code, err = run_damaged(small_copy, capsys)
    assert code == 1 and f"{path}:13:" in err and f"fairness/{TRAIN}:8 " in err


@pytest.mark.parametrize("name", [TRAIN, POOL, VALIDATION])
@pytest.mark.parametrize("where", ["room_fixed", "task_id"])
def test_verify__a_flipped_byte_is_caught_naming_file_and_line(small_copy, capsys, name, where):
    path = small_copy / name
    data = bytearray(path.read_bytes())
    line_start = data.index(b"\n", data.index(b"\n") + 1) + 1  # line 3
    if where == "room_fixed":
        offset = data.index(b'"room_fixed":[[', line_start) + len(b'"room_fixed":[[')
    else:
        offset = data.index(b'"task_id":"', line_start) - 1  # the opening brace
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
    code, err = run_damaged(small_copy, capsys)
    assert code == 1 and f"{path}:3:" in err


def test_verify__a_renderer_that_draws_outside_the_moved_tiles_fails_the_replay(small_copy, capsys, monkeypatch):
    def drifting(room_fixed, room_state):
        image = render_rgb(room_fixed, room_state)
        player_column = next(c for row in room_state for c, v in enumerate(row) if v == 5)
        image[0, 0, 0] ^= player_column % 2  # a wall pixel that flickers as the player walks
        return image

    monkeypatch.setattr(images, "render_rgb", drifting)
    code = verify.main(["--data-dir", str(small_copy), "--workers", "1"])  # the patch lives in this process
    err = capsys.readouterr().err
    assert code == 1 and "rgb_replay" in err and f"{small_copy / TRAIN}:1:" in err


def test_verify__a_changed_renderer_changes_the_frame_digests(small_copy, monkeypatch):
    files, _ = verify.build(small_copy)

    def tinted(room_fixed, room_state):
        image = render_rgb(room_fixed, room_state).astype(np.int16)
        image[image == 0] = 1  # floor drawn 1/255 lighter: invisible, but not identical
        return image.astype(np.uint8)

    monkeypatch.setattr(images, "render_rgb", tinted)
    monkeypatch.setattr(verify, "render_rgb", tinted)  # the tile reader learns the new tiles
    changed, messages = verify.build(small_copy)
    assert messages == []  # the replay itself is still right
    old = json.loads(files[small_copy / "verification.json"])
    new = json.loads(changed[small_copy / "verification.json"])
    assert old["frames_sha256"] != new["frames_sha256"]
    assert all(a["frames_sha256"] != b["frames_sha256"] for a, b in zip(old["boards"], new["boards"]))


def test_verify__check_names_the_report_line_that_differs(small_copy, capsys):
    assert verify.main(["--data-dir", str(small_copy)]) == 0
    report = small_copy / "verification.json"
    text = report.read_text(encoding="utf-8").split("\n")
    line_no = next(i for i, line in enumerate(text, start=1) if '"bfs_length"' in line)
    text[line_no - 1] = text[line_no - 1].replace('"bfs_length": ', '"bfs_length": 1')
    report.write_text("\n".join(text), encoding="utf-8")
    capsys.readouterr()
    assert verify.main(["--check", "--data-dir", str(small_copy)]) == 1
    assert f"{report}:{line_no}:" in capsys.readouterr().err


def test_verify__a_missing_board_file_is_refused_with_its_name(small_copy, capsys):
    (small_copy / POOL).unlink()
    code, err = run_damaged(small_copy, capsys)
    assert code == 1 and str(small_copy / POOL) in err


def redrawn(change):
    """A renderer that draws ``change(room_state)`` instead of the stored position."""
    def render(room_fixed, room_state):
        return render_rgb(room_fixed, change([list(row) for row in room_state]))
    return render


def test_verify__a_start_frame_with_a_second_player_fails_one_box_target_player(small_copy, capsys, monkeypatch):
    def extra_player(state):
        r, c = next((r, c) for r, row in enumerate(state) for c, v in enumerate(row) if v == 1)
        state[r][c] = 5
        return state

    monkeypatch.setattr(images, "render_rgb", redrawn(extra_player))
    code, err = run_damaged(small_copy, capsys)
    assert code == 1 and f"{small_copy / TRAIN}:1: " in err
    assert "one_box_target_player: 2 player, 1 box, 1 target in the start frame" in err


def test_verify__a_start_frame_showing_the_box_on_its_target_fails_nonterminal(small_copy, capsys, monkeypatch):
    def box_drawn_on_target(state):
        return [[3 if v == 4 else v for v in row] for row in state]

    monkeypatch.setattr(images, "render_rgb", redrawn(box_drawn_on_target))
    code, err = run_damaged(small_copy, capsys)
    assert code == 1 and f"{small_copy / TRAIN}:1: " in err
    assert "nonterminal: the start frame shows the box on the target" in err


def test_verify__every_check_is_shown_failing_by_a_test():
    """Each name in CHECKS is asserted in a failure message by a test of this file."""
    source = open(__file__, encoding="utf-8").read()
    for check in verify.CHECKS:
        assert source.count(f"{check}:") + source.count(f'"{check}" in err') >= 1, check
