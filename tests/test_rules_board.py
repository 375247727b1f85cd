"""The rules every other module plays by."""

import pytest

from sokoban_tools.rules.board import DOWN, LEFT, RIGHT, UP, Board, from_lurd, play, to_lurd

ROOM = "\n".join([
    "######",
    "#  . #",
    "# $  #",
    "#  @ #",
    "#    #",
    "######",
])


def test_board__xsb_round_trips_through_room_grids():
    board = Board.from_xsb(ROOM)
    assert board.xsb() == ROOM
    assert Board.from_rooms(board.room_fixed, board.room_state()) == board
    assert board.room_state()[2][2] == 4 and board.room_state()[3][3] == 5
    assert board.room_fixed[1][3] == 2


def test_board__player_on_goal_is_plus_and_code_5():
    board = Board.from_xsb("#####\n#+$ #\n#####")
    assert board.xsb().split("\n")[1] == "#+$ #"
    assert board.room_state()[1][1] == 5 and board.room_fixed[1][1] == 2


def test_board__walk_push_and_blocked_moves():
    board = Board.from_xsb(ROOM)
    walked, outcome = board.move(LEFT)
    assert outcome == "walk" and walked.player == (3, 2) and walked.box == board.box
    pushed, outcome = walked.move(UP)
    assert outcome == "push" and pushed.player == (2, 2) and pushed.box == (1, 2)
    stuck, outcome = pushed.move(UP)  # box against the wall
    assert outcome == "none" and stuck == pushed
    corner = Board.from_xsb("#####\n#@$.#\n#####")
    assert corner.move(UP) == (corner, "none")  # wall ahead


def test_board__push_onto_target_solves():
    board = Board.from_xsb("#####\n#@$.#\n#####")
    solved, outcome = board.move(RIGHT)
    assert outcome == "push" and solved.is_solved
    assert solved.xsb().split("\n")[1] == "# @*#"


@pytest.mark.parametrize("rooms, problem", [
    (([[0, 0], [0, 0]], [[0, 0], [0, 0]]), "expected one player"),
    (([[1, 2, 1]], [[5, 4, 4]]), "disagrees"),
    (([[1, 1, 1]], [[5, 4, 1]]), "expected one target"),
    (([[0, 2, 1]], [[5, 2, 4]]), "on a wall"),
    (([[1, 2, 1]], [[5, 2]]), "shape"),
])
def test_board__from_rooms_refuses_inconsistent_rooms(rooms, problem):
    with pytest.raises(ValueError, match=problem):
        Board.from_rooms(*rooms)


def test_lurd__lower_case_walks_upper_case_pushes_and_round_trips():
    board = Board.from_xsb(ROOM)
    actions = [LEFT, UP, DOWN]
    assert to_lurd(board, actions) == "lUd"
    assert from_lurd("lUd") == actions
    assert [outcome for _, outcome in play(board, actions)] == ["walk", "push", "walk"]


def test_lurd__refuses_moves_that_do_nothing_and_unknown_letters():
    board = Board.from_xsb("#####\n#@$.#\n#####")
    with pytest.raises(ValueError, match="does nothing"):
        to_lurd(board, [UP])
    with pytest.raises(ValueError, match="not LURD"):
        from_lurd("uX")
