"""The exact breadth-first solver."""

import itertools

from sokoban_tools.rules.board import ACTIONS, DOWN, LEFT, RIGHT, UP, Board, play, to_lurd
from sokoban_tools.rules.solver import shortest_solution


def brute_force_length(board, limit):
    """Length of the shortest solving sequence by trying every sequence in turn."""
    for length in range(limit + 1):
        for actions in itertools.product(ACTIONS, repeat=length):
            if (play(board, actions)[-1][0] if actions else board).is_solved:
                return length
    return None


def test_solver__finds_the_shortest_solution_counting_walks():
    board = Board.from_xsb("######\n#  . #\n# $  #\n#  @ #\n#    #\n######")
    actions = shortest_solution(board)
    assert play(board, actions)[-1][0].is_solved
    assert len(actions) == brute_force_length(board, 7)


def test_solver__prefers_up_down_left_right_among_equal_lengths():
    # The player must get round the box; going over the top ("ulldRR") and
    # under it ("dlluRR") are equally short, and up is tried first.
    board = Board.from_xsb("#######\n#     #\n#  $@.#\n#     #\n#######")
    assert shortest_solution(board) == [UP, LEFT, LEFT, DOWN, RIGHT, RIGHT]
    assert to_lurd(board, shortest_solution(board)) == "ulldRR"


def test_solver__returns_empty_when_solved_and_none_when_unsolvable():
    assert shortest_solution(Board.from_xsb("#####\n#@* #\n#####")) == []
    assert shortest_solution(Board.from_xsb("#####\n#$@.#\n#####")) is None
