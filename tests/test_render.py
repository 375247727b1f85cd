"""The renderer draws exactly what gym-sokoban 0.0.6 draws, and the image files are reproducible.

The reference tiles are read from gym-sokoban's own PNGs, never through the
``gym`` package: from an installed ``gym_sokoban`` if there is one (locating a
top-level package does not run it), otherwise from the 0.0.6 archive fetched
once per session with ``pip download``. Only the wheel will do: the 0.0.6
source archive does not contain the tile PNGs.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from unavailable import unavailable

import sokoban_fairness
import sokoban_pins
import sokoban_published
import sokoban_render
from sokoban_render import TILE_SIZE
from sokoban_render import render_rgb
from sokoban_tools.rules.board import RIGHT
from sokoban_tools.rules.board import UP
from sokoban_tools.rules.board import Board
from sokoban_tools.rules.images import contact_sheet
from sokoban_tools.rules.images import render_board
from sokoban_tools.rules.images import replay_frames
from sokoban_tools.rules.images import save_gif
from sokoban_tools.rules.images import save_png

# SHA-256 of gym-sokoban 0.0.6's seven tiles stacked in TILE_NAMES order, (7, 16, 16, 3) uint8.
# It lets the renderer be checked offline too; the online tests confirm the digest itself.
GYM_TILES_SHA256 = "9e507fe63d499210ee4c7f3f870ae10e73247959b721c69878ff269349a3f9ab"

TILE_NAMES = ("wall", "floor", "box_target", "box_on_target", "box", "player", "player_on_target")

BOARDS = {
    "box_and_player_on_floor": "######\n#  . #\n# $  #\n#  @ #\n#    #\n######",
    "player_on_target": "######\n#  + #\n# $  #\n#    #\n#    #\n######",
    "box_on_target": "######\n#  * #\n#    #\n# @  #\n#    #\n######",
    "inner_walls": "######\n##.# #\n#  $ #\n# ## #\n#@   #\n######",
    "not_square": "#######\n#.$  @#\n#######",
}


def _decode(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def _tiles_from_installed_package() -> dict[str, np.ndarray] | None:
    spec = importlib.util.find_spec("gym_sokoban")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        if importlib.metadata.version("gym-sokoban") != "0.0.6":
            return None
    except importlib.metadata.PackageNotFoundError:
        return None
    surface = Path(list(spec.submodule_search_locations)[0]) / "envs" / "surface"
    if not all((surface / f"{name}.png").is_file() for name in TILE_NAMES):
        return None
    return {name: _decode((surface / f"{name}.png").read_bytes()) for name in TILE_NAMES}


def _tiles_from_wheel(wheel: Path) -> dict[str, np.ndarray]:
    found = {}
    with zipfile.ZipFile(wheel) as bundle:
        for name in TILE_NAMES:
            found[name] = _decode(bundle.read(f"gym_sokoban/envs/surface/{name}.png"))
    return found


@pytest.fixture(scope="session")
def gym_tiles(tmp_path_factory) -> dict[str, np.ndarray]:
    """gym-sokoban 0.0.6's seven 16x16 RGB tiles, by file name."""
    tiles = _tiles_from_installed_package()
    if tiles is not None:
        return tiles
    target = tmp_path_factory.mktemp("gym-sokoban")
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
             "--only-binary=:all:", "gym-sokoban==0.0.6", "-d", str(target)],
            check=True, capture_output=True, text=True, timeout=300,
        )
    except (subprocess.SubprocessError, OSError) as err:
        detail = (getattr(err, "stderr", None) or str(err)).strip()
        reason = detail.splitlines()[-1] if detail else type(err).__name__
        unavailable(f"gym-sokoban 0.0.6 is not installed and `pip download` of its wheel failed: {reason}")
    wheels = sorted(target.glob("gym_sokoban-0.0.6-*.whl"))
    if not wheels:
        unavailable("`pip download gym-sokoban==0.0.6` produced no wheel")
    return _tiles_from_wheel(wheels[0])


def _compose(tiles: dict[str, np.ndarray], room_fixed, room_state) -> np.ndarray:
    """gym-sokoban's picture, assembled cell by cell from its PNGs."""
    rows = []
    for fixed_row, state_row in zip(room_fixed, room_state):
        names = [
            "player_on_target" if s == 5 and f == 2 else TILE_NAMES[s]
            for f, s in zip(fixed_row, state_row)
        ]
        rows.append(np.concatenate([tiles[name] for name in names], axis=1))
    return np.concatenate(rows, axis=0)


@pytest.mark.parametrize(
    ("fixed", "state", "name"),
    [(0, 0, "wall"), (1, 1, "floor"), (2, 2, "box_target"), (2, 3, "box_on_target"),
     (1, 4, "box"), (1, 5, "player"), (2, 5, "player_on_target")],
)
def test_render__every_tile_matches_gym_sokoban_artwork(gym_tiles, fixed, state, name):
    assert gym_tiles[name].shape == (TILE_SIZE, TILE_SIZE, 3)
    np.testing.assert_array_equal(render_rgb([[fixed]], [[state]]), gym_tiles[name])


def _one_cell_renders() -> np.ndarray:
    cases = [(0, 0), (1, 1), (2, 2), (2, 3), (1, 4), (1, 5), (2, 5)]
    return np.stack([render_rgb([[fixed]], [[state]]) for fixed, state in cases])


def test_render__tiles_match_the_pinned_digest_even_offline():
    assert hashlib.sha256(_one_cell_renders().tobytes()).hexdigest() == GYM_TILES_SHA256


def test_render__pinned_digest_is_that_of_gym_sokoban_tiles(gym_tiles):
    stacked = np.stack([gym_tiles[name] for name in TILE_NAMES])
    assert hashlib.sha256(stacked.tobytes()).hexdigest() == GYM_TILES_SHA256


def test_render__player_on_target_uses_its_own_tile(gym_tiles):
    board = Board.from_xsb(BOARDS["player_on_target"])
    r, c = board.player
    image = render_board(board)
    cell = image[r * TILE_SIZE:(r + 1) * TILE_SIZE, c * TILE_SIZE:(c + 1) * TILE_SIZE]
    np.testing.assert_array_equal(cell, gym_tiles["player_on_target"])
    assert not np.array_equal(cell, gym_tiles["player"])


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_render__whole_boards_match_a_composition_of_gym_sokoban_tiles(gym_tiles, name):
    board = Board.from_xsb(BOARDS[name])
    expected = _compose(gym_tiles, board.room_fixed, board.room_state())
    np.testing.assert_array_equal(render_rgb(board.room_fixed, board.room_state()), expected)


def test_render__returns_a_fresh_uint8_image_of_sixteen_pixels_per_cell():
    board = Board.from_xsb(BOARDS["not_square"])
    image = render_board(board)
    assert image.shape == (3 * TILE_SIZE, 7 * TILE_SIZE, 3)
    assert image.dtype == np.uint8
    assert image.flags.writeable and image.flags.c_contiguous
    image[...] = 0
    assert render_board(board).any()


def test_render__accepts_nested_lists_and_arrays_alike():
    board = Board.from_xsb(BOARDS["box_and_player_on_floor"])
    from_lists = render_rgb([list(r) for r in board.room_fixed], [list(r) for r in board.room_state()])
    from_arrays = render_rgb(np.array(board.room_fixed, dtype=np.int64), np.array(board.room_state(), dtype=np.uint8))
    assert from_lists.shape == (96, 96, 3)
    np.testing.assert_array_equal(from_lists, from_arrays)


def test_render__rejects_mismatched_shapes_and_unknown_codes():
    with pytest.raises(ValueError, match="must be equal 2-D shapes"):
        render_rgb([[1, 1]], [[1]])
    for codes in ([[6]], [[-1]], [[1.0]]):
        with pytest.raises(ValueError, match="codes must be integers in 0..5"):
            render_rgb([[1]], codes)


def test_render_position__draws_what_render_rgb_draws_for_every_player_and_box_cell(pool_rows):
    drawn = 0
    for row in pool_rows[:100]:
        fixed = row.board.room_fixed
        cells = [(r, c) for r, line in enumerate(fixed) for c, code in enumerate(line) if code]
        for player in cells:
            for box in cells:
                if player != box:
                    board = Board(fixed, player, box)
                    np.testing.assert_array_equal(sokoban_render.render_position(fixed, player, box),
                                                  render_rgb(fixed, board.room_state()))
                    drawn += 1
    assert drawn > 10_000  # all pairs of open cells of 100 rooms


def test_render_position__returns_a_fresh_image_and_its_cache_survives_writes():
    board = Board.from_xsb(BOARDS["player_on_target"])
    image = sokoban_render.render_position(board.room_fixed, board.player, board.box)
    assert image.flags.writeable and image.dtype == np.uint8 and image.shape == (96, 96, 3)
    image[...] = 0
    np.testing.assert_array_equal(sokoban_render.render_position(board.room_fixed, board.player, board.box),
                                  render_rgb(board.room_fixed, board.room_state()))


def test_render_position__rejects_cells_outside_the_room_and_pieces_in_room_fixed():
    board = Board.from_xsb(BOARDS["box_and_player_on_floor"])
    for player, box in (((-1, 2), board.box), (board.player, (2, 6))):
        with pytest.raises(ValueError, match="outside the 6x6 room"):
            sokoban_render.render_position(board.room_fixed, player, box)
    with pytest.raises(ValueError, match="room_fixed codes must be 0 wall, 1 floor or 2 target"):
        sokoban_render.render_position(board.room_state(), board.player, board.box)


def test_encode_png__palette_and_rgb_files_decode_to_the_rendered_pixels():
    board = Board.from_xsb(BOARDS["player_on_target"])
    expected = render_board(board)
    indices = sokoban_render.render_indices(board.room_fixed, board.room_state())
    for png in (sokoban_render.encode_png(indices, sokoban_render.PALETTE),
                sokoban_render.encode_png(expected, level=9)):
        decoded = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        assert np.array_equal(decoded, expected)
    with pytest.raises(ValueError, match="expected an \\(H, W, 3\\) RGB image"):
        sokoban_render.encode_png(indices)  # indices without their palette


def _imports(module) -> list[tuple[int, int, str]]:
    """(line, level, module) of every import statement of ``module``, one module per statement."""
    found = []
    for node in ast.walk(ast.parse(Path(module.__file__).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            assert len(node.names) == 1, f"line {node.lineno} imports several modules"
            found.append((node.lineno, 0, node.names[0].name))
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.level, node.module))
    return found


def test_loading_script__imports_only_stdlib_datasets_and_the_modules_beside_it():
    allowed = set(sys.stdlib_module_names) | {"datasets", "PIL", "__future__"}  # PIL: only probed for images
    assert all(level == 0 and name.split(".")[0] in allowed for _, level, name in _imports(sokoban_fairness))
    for module in (sokoban_pins, sokoban_published):  # shipped beside it: the standard library only
        assert all(level == 0 and name.split(".")[0] in set(sys.stdlib_module_names) | {"__future__"}
                   for _, level, name in _imports(module))
    # datasets <= 3.6 copies a module beside the script only if it finds, outside
    # triple-double-quoted strings, a line that starts with "from .<module>"
    lines = Path(sokoban_fairness.__file__).read_text(encoding="utf-8").split("\n")
    hint = lines.index("from .sokoban_render import render_rgb")
    assert lines[hint - 1] == "_COPIED_BY_DATASETS = '''"
    assert lines[hint + 1:hint + 4] == ["from .sokoban_pins import RELEASE",
                                        "from .sokoban_published import check_published_file", "'''"]


def test_renderer__imports_only_stdlib_and_numpy_and_is_the_loading_scripts():
    allowed = set(sys.stdlib_module_names) | {"numpy", "__future__"}
    assert all(level == 0 and name.split(".")[0] in allowed for _, level, name in _imports(sokoban_render))
    for name in ("render_rgb", "render_indices", "encode_png", "PALETTE", "TILE_SIZE"):
        assert getattr(sokoban_fairness, name) is getattr(sokoban_render, name), name


def test_save_png__writes_identical_bytes_twice_and_rereads_the_same_pixels(tmp_path):
    image = render_board(Board.from_xsb(BOARDS["inner_walls"]))
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    save_png(first, image)
    save_png(second, image)
    assert first.read_bytes() == second.read_bytes()
    save_png(first, image)
    assert first.read_bytes() == second.read_bytes()
    np.testing.assert_array_equal(np.asarray(Image.open(first).convert("RGB")), image)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png"]


def test_contact_sheet__has_documented_dimensions_and_background_in_the_gaps():
    images = [render_board(Board.from_xsb(text)) for text in BOARDS.values() if text.count("\n") == 5]
    assert len(images) == 4
    sheet = contact_sheet(images, columns=3, gap=5, background=(255, 0, 255))
    assert sheet.shape == (2 * 96 + 3 * 5, 3 * 96 + 4 * 5, 3)
    assert sheet.dtype == np.uint8
    np.testing.assert_array_equal(sheet[5:101, 5:101], images[0])
    np.testing.assert_array_equal(sheet[106:202, 5:101], images[3])
    assert (sheet[:5] == (255, 0, 255)).all()
    assert (sheet[106:202, 106:] == (255, 0, 255)).all()


def test_save_gif__stores_one_frame_per_move_with_exact_colours(tmp_path):
    board = Board.from_xsb(BOARDS["box_and_player_on_floor"])
    frames = replay_frames(board, [UP, UP, RIGHT])
    path = tmp_path / "replay.gif"
    save_gif(path, frames, duration_ms=200)
    with Image.open(path) as gif:
        assert gif.is_animated
        assert gif.n_frames == len(frames) == 4
        for i, frame in enumerate(frames):
            gif.seek(i)
            assert gif.info["duration"] == 200
            np.testing.assert_array_equal(np.asarray(gif.convert("RGB")), frame)
    assert [p.name for p in tmp_path.iterdir()] == ["replay.gif"]
