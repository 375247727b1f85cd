"""The runtime environment: rules, rewards, horizon, and conformance with gym-sokoban 0.0.6.

The conformance test needs gym-sokoban in the environment (CI installs it):
``pip install "setuptools<81" gym==0.26.2 gym-sokoban==0.0.6``. gym-sokoban
imports ``pkg_resources``, which setuptools 81 and later no longer ship; its
other dependencies (gym's cloudpickle and gym-notices, imageio, requests) come
with it, and it runs on numpy 2.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image, ImageSequence

from conftest import REPO
from unavailable import unavailable
from sokoban_render import render_rgb
from sokoban_tools.rules.board import DOWN, RIGHT, UP, Board, from_lurd
from sokoban_tools.protocol import DEFAULT_MAX_STEPS
from sokoban_tools.rules.reward import step_reward
from sokoban_tools.runtime.env import MODES, NO_ACTION, FairSokobanEnv, render
from sokoban_tools.rules.images import replay_frames
from sokoban_tools.pipeline.publish.runtime_benchmark import load_into_gym
from sokoban_tools.records.tasks import load_validation

# A corridor: player, box, target in a row; the box is one push from its target.
CORRIDOR = Board.from_xsb("######\n#@$. #\n#    #\n#    #\n#    #\n######")


def test_reset__restores_the_stored_board_and_shows_it(train_rows):
    row = train_rows[0]
    env = FairSokobanEnv()
    observation, info = env.reset(row)
    assert env.board == row.board
    assert info == {"won": False}
    assert observation.shape == (96, 96, 3) and observation.dtype == np.uint8
    assert np.array_equal(observation, render_rgb(row.board.room_fixed, row.board.room_state()))


def test_reset__returns_to_the_initial_board_after_play(train_rows):
    row = train_rows[1]
    env = FairSokobanEnv()
    first, _ = env.reset(row)
    env.step(RIGHT)
    again, _ = env.reset(row)
    assert env.board == row.board and env.num_env_steps == 0
    assert np.array_equal(first, again)


def test_step__walk_costs_a_tenth_and_is_effective():
    env = FairSokobanEnv()
    env.reset(CORRIDOR)
    observation, reward, done, info = env.step(DOWN)
    assert reward == -0.1 and not done
    assert info == {"action_is_effective": True, "won": False}
    assert env.board.xsb() == "######\n# $. #\n#@   #\n#    #\n#    #\n######"


def test_step__bumping_a_wall_costs_a_tenth_and_is_not_effective():
    env = FairSokobanEnv()
    env.reset(CORRIDOR)
    _, reward, done, info = env.step(UP)
    assert reward == -0.1 and not done
    assert info == {"action_is_effective": False, "won": False}
    assert env.board == CORRIDOR


def test_step__pushing_the_box_onto_the_target_wins_and_ends_the_episode():
    env = FairSokobanEnv()
    env.reset(CORRIDOR)
    observation, reward, done, info = env.step(RIGHT)
    assert reward == -0.1 + 1.0 + 10.0
    assert done and info == {"action_is_effective": True, "won": True}
    assert env.board.xsb() == "######\n# @* #\n#    #\n#    #\n#    #\n######"


def test_step_reward__a_box_leaving_its_target_costs_one():
    on = Board.from_xsb("######\n#@*  #\n#    #\n#    #\n#    #\n######")
    off, outcome = on.move(RIGHT)
    assert outcome == "push"
    assert step_reward(on, off) == -0.1 - 1.0


def test_step__done_at_the_horizon_by_equality_and_stepping_on_counts_on_with_done_false():
    env = FairSokobanEnv()
    env.reset(CORRIDOR)
    dones = [env.step(UP)[2] for _ in range(DEFAULT_MAX_STEPS + 2)]
    assert DEFAULT_MAX_STEPS == 15
    assert dones == [False] * 14 + [True, False, False]
    assert env.num_env_steps == 17


def test_step__action_0_costs_a_tenth_moves_nothing_and_counts_no_step():
    env = FairSokobanEnv(mode="tiny_rgb_array")
    before, _ = env.reset(CORRIDOR)
    observation, reward, done, info = env.step(NO_ACTION)
    assert (reward, done, info) == (-0.1, False, {"action_is_effective": False, "won": False})
    assert observation == before and env.num_env_steps == 0 and env.board == CORRIDOR


def test_step__after_a_win_moves_pay_9_9_and_stay_done_while_action_0_reports_not_won():
    env = FairSokobanEnv()
    env.reset(CORRIDOR)
    assert env.step(RIGHT)[1:] == (-0.1 + 1.0 + 10.0, True, {"action_is_effective": True, "won": True})
    assert env.step(DOWN)[1:] == (-0.1 + 10.0, True, {"action_is_effective": True, "won": True})
    assert env.step(NO_ACTION)[1:] == (-0.1, False, {"action_is_effective": False, "won": False})
    assert env.num_env_steps == 2


@pytest.mark.parametrize("action", [5, -1, 1.0, True, "up", None])
def test_step__refuses_anything_but_the_five_actions(action):
    env = FairSokobanEnv()
    env.reset(CORRIDOR)
    with pytest.raises(ValueError, match="0 no action, 1 up, 2 down, 3 left, 4 right"):
        env.step(action)
    assert env.num_env_steps == 0


@pytest.mark.parametrize("mode", ["rgb", "human", None])
def test_constructor__refuses_an_unknown_mode(mode):
    with pytest.raises(ValueError, match="rgb_array, tiny_rgb_array, list, state"):
        FairSokobanEnv(mode=mode)


def test_step__numpy_integer_actions_are_accepted():
    env = FairSokobanEnv()
    env.reset(CORRIDOR)
    assert env.step(np.int64(RIGHT))[3]["won"]


def test_step__before_any_reset_is_an_error():
    with pytest.raises(RuntimeError, match="reset"):
        FairSokobanEnv().step(UP)


def test_reset__refuses_a_solved_board():
    with pytest.raises(ValueError, match="already solved"):
        FairSokobanEnv().reset(Board.from_xsb("######\n#@*  #\n#    #\n#    #\n#    #\n######"))


NO_TARGET = tuple(tuple(1 if v == 2 else v for v in row) for row in CORRIDOR.room_fixed)


@pytest.mark.parametrize("board, reason", [
    (Board(CORRIDOR.room_fixed, CORRIDOR.box, CORRIDOR.box), "share the cell"),
    (Board(NO_TARGET, CORRIDOR.player, CORRIDOR.box), "0 targets"),
    (Board(CORRIDOR.room_fixed, (6, 1), CORRIDOR.box), "player at (6, 1) is off the 6x6 grid"),
    (Board(CORRIDOR.room_fixed, CORRIDOR.player, (0, 2)), "box at (0, 2) is off the 6x6 grid or on a wall"),
    (Board(CORRIDOR.room_fixed, (-1, 1), CORRIDOR.box), "player at (-1, 1)"),
])
def test_reset__refuses_a_board_that_breaks_the_boards_invariants_with_the_reason(board, reason):
    with pytest.raises(ValueError, match=rf"cannot be played: .*{re.escape(reason)}"):
        FairSokobanEnv().reset(board)


def test_render__gives_new_arrays_and_lists_each_call_though_it_keeps_what_it_drew(train_rows):
    board = train_rows[0].board
    for mode in MODES:
        first = render(board, mode)
        if isinstance(first, np.ndarray):
            assert first.flags.writeable
            first[...] = 0
        elif isinstance(first, list):
            first[0] = "changed"
    state = board.room_state()
    np.testing.assert_array_equal(render(board, "rgb_array"), render_rgb(board.room_fixed, state))
    assert render(board, "list")[0] == " ".join("#_O√XPS"[code] for code in state[0])
    assert render(board, "state").tolist()[0] == list(state[0])


def test_stored_solutions__win_on_their_last_action(pool_rows):
    env = FairSokobanEnv()
    for row in pool_rows[:200]:
        env.reset(row)
        actions = from_lurd(row.shortest_solution)
        results = [env.step(a) for a in actions]
        assert [done for _, _, done, _ in results] == [False] * (len(actions) - 1) + [True], row.task_id
        assert results[-1][3]["won"] and results[-1][1] == -0.1 + 1.0 + 10.0
        assert all(r == -0.1 for _, r, _, _ in results[:-1])


# ---------------------------------------------------------------------------
# Conformance with gym-sokoban 0.0.6, the environment verl-agent wraps
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gym_sokoban_env():
    """gym-sokoban's own SokobanEnv, configured as verl-agent configures it
    (6x6, one box, the launchers' 15-action horizon), without a generated room.

    Its renderer looks up and re-reads its seven tile PNGs on every frame; the
    fixture caches those lookups and reads (the same files, read once) so that
    every step's image can be compared in reasonable time.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import imageio
            import pkg_resources
            from gym_sokoban.envs import render_utils
            from gym_sokoban.envs.sokoban_env import SokobanEnv as GymSokobanEnv
        except ImportError as err:
            unavailable(
                f"gym-sokoban is not importable ({err}); install it with "
                '`pip install "setuptools<81" gym==0.26.2 gym-sokoban==0.0.6` to run the conformance test'
            )
    cached = functools.lru_cache(maxsize=None)
    patch = pytest.MonkeyPatch()
    patch.setattr(render_utils, "imageio", SimpleNamespace(imread=cached(imageio.v2.imread)))
    patch.setattr(render_utils, "pkg_resources",
                  SimpleNamespace(resource_filename=cached(pkg_resources.resource_filename)))
    yield GymSokobanEnv(dim_room=(6, 6), max_steps=DEFAULT_MAX_STEPS, num_boxes=1, reset=False)
    patch.undo()


@dataclass(frozen=True)
class Context:
    """Where a conformance assertion failed; formatted only when one does."""

    board: Board
    step: int
    action: int

    def __str__(self) -> str:
        return f"board {self.board.xsb()!r}, step {self.step}, action {self.action}"


@pytest.mark.slow
def test_conformance__random_play_matches_gym_sokoban_step_for_step(gym_sokoban_env, train_rows, pool_rows):
    """One random 15-action episode from every stored board (the 5,000 training
    boards and the 1,000-board pool, which holds the 256 validation boards),
    compared after every step: state, image, reward, done and verl-agent's info."""
    gym_env = gym_sokoban_env
    env = FairSokobanEnv()
    rng = np.random.default_rng(20240605)
    boards = [row.board for row in train_rows + pool_rows]
    compared_steps = wins = horizon_ends = 0
    for board in boards:
        observation, _ = env.reset(board)
        load_into_gym(gym_env, board)
        assert np.array_equal(observation, gym_env.render("rgb_array"))
        done = False
        while not done:
            action = int(rng.integers(1, 5))
            player_before = gym_env.player_position
            gym_obs, gym_reward, gym_done, _ = gym_env.step(action, observation_mode="rgb_array")
            observation, reward, done, info = env.step(action)
            context = Context(board, env.num_env_steps, action)
            assert np.array_equal(np.array(env.board.room_state()), gym_env.room_state), context
            assert reward == gym_reward, context
            assert done == gym_done, context
            assert np.array_equal(observation, gym_obs), context
            # verl-agent's wrapper derives its info from gym-sokoban's state so:
            moved = not np.array_equal(player_before, gym_env.player_position)
            assert info["action_is_effective"] == moved, context
            assert info["won"] == (gym_env.boxes_on_target == gym_env.num_boxes), context
            compared_steps += 1
        wins += info["won"]
        horizon_ends += not info["won"]
    print(f"conformance: {len(boards)} boards, {compared_steps} steps compared, "
          f"{wins} episodes won, {horizon_ends} reached the horizon")
    assert len(boards) == 6000
    # Both ways an episode ends were exercised, and many steps compared.
    assert wins > 100 and horizon_ends > 100
    assert compared_steps > 50_000


# ---------------------------------------------------------------------------
# The card's example
# ---------------------------------------------------------------------------


def test_example__plays_a_validation_board_to_a_gif_a_person_can_open(tmp_path):
    (tmp_path / "fairness").mkdir()
    shutil.copy(REPO / "fairness/evaluation.jsonl", tmp_path / "fairness/evaluation.jsonl")
    first = load_validation(REPO / "fairness/evaluation.jsonl")[0]
    expected = replay_frames(first.board, from_lurd(first.shortest_solution))
    # Where the user says, and by default into a fresh temporary folder, never the clone.
    (tmp_path / "temp").mkdir()
    for arguments, written in ((["board.gif"], tmp_path / "board.gif"), ([], None)):
        result = subprocess.run(
            [sys.executable, "-m", "examples.play_validation_board", *arguments],
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path / "temp")},
            capture_output=True, text=True, timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert f"{first.task_id}: won=True in {first.shortest_solution_length} actions; wrote " in result.stdout
        path = Path(result.stdout.split("; wrote ")[1].strip())
        if written is None:
            assert path.parent.parent == tmp_path / "temp" and path.name == "validation-board.gif"
        else:
            assert tmp_path / path == written
        with Image.open(tmp_path / path) as gif:
            assert gif.format == "GIF" and gif.n_frames == len(expected) and gif.info["loop"] == 0
            for frame, image in zip(ImageSequence.Iterator(gif), expected):
                assert np.array_equal(np.asarray(frame.convert("RGB")), image)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board.gif", "fairness", "temp"]
