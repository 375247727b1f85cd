"""Uniqueness under the 8 symmetries of the square."""

import pytest

from sokoban_tools.rules.board import Board
from sokoban_tools.rules.symmetry import canonical_form, symmetric_images

ROOM = "######\n#  . #\n# $  #\n#  @ #\n#    #\n######"


def test_symmetry__all_eight_images_share_one_canonical_form():
    images = symmetric_images(Board.from_xsb(ROOM))
    assert len(images) == 8 and len(set(images)) == 8  # this board has no symmetry of its own
    forms = {canonical_form(Board.from_xsb(image)) for image in images}
    assert forms == {canonical_form(Board.from_xsb(ROOM))}


def test_symmetry__images_are_rotations_and_reflections():
    images = symmetric_images(Board.from_xsb(ROOM))
    transpose = "\n".join("".join(col) for col in zip(*ROOM.split("\n")))
    upside_down = "\n".join(ROOM.split("\n")[::-1])
    assert ROOM in images and transpose in images and upside_down in images


def test_symmetry__moving_the_player_gives_a_different_task():
    moved = ROOM.replace("#  @ #", "# @  #")
    assert canonical_form(Board.from_xsb(moved)) != canonical_form(Board.from_xsb(ROOM))


def test_symmetry__refuses_rectangular_rooms():
    with pytest.raises(ValueError, match="square"):
        canonical_form(Board.from_xsb("#####\n#@$.#\n#####"))
