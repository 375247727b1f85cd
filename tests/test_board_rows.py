"""A board file that is damaged in any way is refused, naming the file and the line."""

import json
import re

import pytest

from conftest import DATA_DIR
from sokoban_tools.rules.board import Board
from sokoban_published import ROW_KEYS
from sokoban_tools.records.rows import DataError, encode_row, read_rows
from sokoban_tools.rules.solver import shortest_solution

GOOD = (DATA_DIR / "evaluation.jsonl").read_text(encoding="utf-8").splitlines()[:3]


def with_field(key, value):
    row = json.loads(GOOD[1])
    row[key] = value
    return json.dumps(row, separators=(",", ":"))


def reordered():
    row = json.loads(GOOD[1])
    return json.dumps({k: row[k] for k in reversed(ROW_KEYS)}, separators=(",", ":"))


def second_player():
    row = json.loads(GOOD[1])
    flat = [v for r in row["room_state"] for v in r]
    flat[flat.index(1)] = 5
    row["room_state"] = [flat[i:i + 6] for i in range(0, 36, 6)]
    return json.dumps(row, separators=(",", ":"))


def moved_player():
    row = json.loads(GOOD[1])
    flat = [v for r in row["room_state"] for v in r]
    player, floor = flat.index(5), flat.index(1)
    flat[player], flat[floor] = row["room_fixed"][player // 6][player % 6], 5
    row["room_state"] = [flat[i:i + 6] for i in range(0, 36, 6)]
    return json.dumps(row, separators=(",", ":"))


def consistent_row(xsb, seed=65_600):
    """A row that agrees with itself (xsb, rooms, a shortest solution) for any board."""
    board = Board.from_xsb(xsb)
    return encode_row("eval-0001", seed, board, shortest_solution(board))


SEVEN = "#######\n#@$.  #\n#     #\n#     #\n#     #\n#     #\n#######"
OPEN_BORDER = "######\n#@$.  \n#    #\n#    #\n#    #\n######"


def escaped_first_id_letter():
    """The same row with the task ID's first letter written as a JSON \\u escape."""
    start = GOOD[1].index('"task_id":"') + len('"task_id":"')
    return GOOD[1][:start] + f"\\u{ord(GOOD[1][start]):04x}" + GOOD[1][start + 1:]


def duplicate_key():
    return GOOD[1].replace('"seed":', '"task_id":"eval-0999","seed":', 1)


DAMAGE = {
    "7x7 board": (consistent_row(SEVEN), re.escape("room_fixed is 7 rows of [7] cells, expected a 6x6 board")),
    "1x3 board without walls": (consistent_row("@$."), re.escape("room_fixed is 1 rows of [3] cells")),
    "1x18 corridor": (consistent_row("#@$.              #"), re.escape("room_fixed is 1 rows of [19] cells")),
    "open border": (consistent_row(OPEN_BORDER), r"room_fixed has non-wall border cells \[\(1, 5\)\]"),
    "seed above int64": (consistent_row("######\n#@$. #\n#    #\n#    #\n#    #\n######", 2**63),
                         "seed 9223372036854775808 is outside int64"),
    "seed below int64": (with_field("seed", -(2**63) - 1), "seed -9223372036854775809 is outside int64"),
    "CRLF line end": (GOOD[1] + "\r", "carriage return"),
    "spaced separators": (GOOD[1].replace(",", ", ").replace('":', '": '), "canonical form"),
    "trailing whitespace": (GOOD[1] + " ", "canonical form"),
    "leading whitespace": (" " + GOOD[1], "canonical form"),
    "escaped character": (escaped_first_id_letter(), "canonical form"),
    "duplicate key": (duplicate_key(), "duplicate key task_id"),
    "not JSON": ("{not json", "not valid JSON"),
    "keys reordered": (reordered(), "keys are"),
    "seed not an integer": (with_field("seed", "12"), "seed is not a int"),
    "grid of strings": (with_field("room_state", [["0"] * 6] * 6), "room_state is not a list of lists"),
    "two players": (second_player(), re.escape("room_state has 2 players, expected one")),
    "a box on a wall": (with_field("room_state", [[4] * 6] * 6), re.escape("room_state[0][0] = 4 disagrees with room_fixed[0][0] = 0")),
    "xsb of another position": (moved_player(), "xsb does not match"),
    "empty solution": (with_field("shortest_solution", ""), "the solution has 0 actions"),
    "unknown letter": (with_field("shortest_solution", "x"), "not in LURD notation"),
    "wrong length": (with_field("shortest_solution_length", 99), "shortest_solution_length is 99"),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_read_rows__refuses_a_damaged_row_naming_file_and_line(tmp_path, damage):
    bad, problem = DAMAGE[damage]
    path = tmp_path / "evaluation.jsonl"
    path.write_text("\n".join([GOOD[0], bad, GOOD[2]]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=problem) as refused:
        read_rows(path)
    assert str(refused.value).startswith(f"{path}:2: ")
    assert "regenerate it" in str(refused.value)


def test_read_rows__refuses_a_truncated_file_and_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes(("\n".join(GOOD) + "\n")[:-20].encode())
    with pytest.raises(DataError, match=rf"^{path}:3: .*truncated"):
        read_rows(path)
    path.write_bytes((GOOD[0] + "\n").encode() + b"\xff\xfe\n")
    with pytest.raises(DataError, match=rf"^{path}:2: not UTF-8"):
        read_rows(path)
    with pytest.raises(DataError, match="cannot be read"):
        read_rows(tmp_path / "missing.jsonl")


def test_read_rows__keeps_each_rows_exact_line(tmp_path):
    path = tmp_path / "evaluation.jsonl"
    path.write_text("\n".join(GOOD) + "\n", encoding="utf-8")
    assert [row.line for row in read_rows(path)] == GOOD

