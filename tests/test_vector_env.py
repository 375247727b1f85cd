"""SokobanFairnessVector-v1 plays what the shards of SokobanFairness-v1 play, step for step, as arrays.

The batch under it replays every recorded trace of verl-agent's environment (all 1,200 in one
batch); the vector is played beside Gymnasium's ``SyncVectorEnv`` of the single environments
(``make_vec("SokobanFairness-v1")`` and its same-step variant) on the same random actions, well
over 100,000 env steps in all, comparing every observation, reward, end, info and the bytes of
the two episode logs.
"""

from __future__ import annotations

import hashlib
from functools import partial

import numpy as np
import pytest

from traces import boards_of, load_traces

from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import manifest_path
from sokoban_tools.records.tasks import load_training, load_validation
from sokoban_tools.rules.board import Board
from sokoban_tools.runtime.batch import BoardBatch, BoardTable
from sokoban_tools.runtime.env import render
from sokoban_tools.runtime.sampler import TrainingSampler


def test_the_batch_replays_every_runtime_trace_step_for_step_all_1200_at_once():
    traces = load_traces()
    boards = boards_of(traces)
    table = BoardTable(boards)
    batch = BoardBatch(table, len(traces), max_steps=15)
    batch.start(np.arange(len(traces)), np.arange(len(traces)))
    found, compared = [], 0

    def check(number: int, index: int, expected: dict, states: np.ndarray, images: np.ndarray) -> None:
        trace = traces[index]
        board = Board(boards[index].room_fixed, divmod(int(batch.player[index]), 6), divmod(int(batch.box[index]), 6))
        got = {"state": states[index].reshape(6, 6).tolist(), "num_env_steps": int(batch.steps[index]),
               "list": render(board, "list"), "tiny_rgb_array": render(board, "tiny_rgb_array")}
        if trace["mode"] == "rgb_array":
            got["obs"] = {"shape": [96, 96, 3], "dtype": "uint8",
                          "sha256": hashlib.sha256(np.ascontiguousarray(images[index]).tobytes()).hexdigest()}
        else:
            got["obs"] = got["tiny_rgb_array"]
        for key in got:
            if got[key] != expected[key]:
                found.append(f"{trace['task_id']} {trace['mode']} {trace['episode']} step {number}: {key} "
                             f"{got[key]!r} != {expected[key]!r}")

    states = batch.states()
    images = batch.images(states)
    for index, trace in enumerate(traces):
        check(0, index, trace["reset"], states, images)
    for number in range(1, max(len(trace["actions"]) for trace in traces) + 1):
        playing = np.array([len(trace["actions"]) >= number for trace in traces])
        actions = np.array([trace["actions"][number - 1] if len(trace["actions"]) >= number else 0 for trace in traces])
        before = (batch.player.copy(), batch.box.copy(), batch.steps.copy())
        reward, done, won, effective = batch.play(actions)
        states = batch.states()
        images = batch.images(states)
        for index in np.flatnonzero(playing):
            step = traces[index]["steps"][number - 1]
            got = {"reward": float(reward[index]), "done": bool(done[index]),
                   "info": {"action_is_effective": bool(effective[index]), "won": bool(won[index])}}
            for key, value in got.items():
                if value != step[key]:
                    found.append(f"{traces[index]['task_id']} step {number}: {key} {value!r} != {step[key]!r}")
            check(number, index, step, states, images)
            compared += 1
        for array, old in zip((batch.player, batch.box, batch.steps), before):  # the finished ones stay put
            array[~playing] = old[~playing]
    assert not found, "\n".join(found[:20])
    assert compared > 10_000


def test_the_batch_steps_on_past_the_end_as_the_runtime_does():
    from sokoban_tools.runtime.env import FairSokobanEnv

    rows = load_validation()[:64]
    batch = BoardBatch(BoardTable([row.board for row in rows]), len(rows), max_steps=15)
    batch.start(np.arange(len(rows)), np.arange(len(rows)))
    envs = [FairSokobanEnv("state", 15) for _ in rows]
    for env, row in zip(envs, rows):
        env.reset(row)
    rng = np.random.default_rng(1)
    solutions = [[" udlr".index(c.lower()) for c in row.shortest_solution] for row in rows]
    for number in range(40):  # the solution first (a win, then moves after it), then random moves past 15
        actions = np.array([s[number] if number < len(s) else rng.integers(0, 5) for s in solutions])
        reward, done, won, effective = batch.play(actions)
        states = batch.states()
        for i, (env, action) in enumerate(zip(envs, actions.tolist())):
            state, expected_reward, expected_done, info = env.step(action)
            assert (float(reward[i]), bool(done[i]), bool(won[i]), bool(effective[i])) == (
                expected_reward, expected_done, info["won"], info["action_is_effective"]), (rows[i].task_id, number)
            assert states[i].reshape(6, 6).tolist() == state.tolist()
            assert batch.steps[i] == env.num_env_steps


def shards(gymnasium, num_envs: int, mode, **kwargs):
    """Gymnasium's own vector of the single environments, shard i of num_envs each."""
    from sokoban_tools.integrations.gymnasium_env.env import SokobanFairnessEnv

    return gymnasium.vector.SyncVectorEnv(
        [partial(SokobanFairnessEnv, shard_index=i, shard_count=num_envs, **kwargs) for i in range(num_envs)],
        autoreset_mode=mode)


def same_infos(a: dict, b: dict, where: str) -> None:
    assert set(a) == set(b), (where, sorted(a), sorted(b))
    for key in a:
        if isinstance(a[key], dict):
            same_infos(a[key], b[key], f"{where} {key}")
        elif key == "final_obs":
            assert all((x is None and y is None) or np.array_equal(x, y) for x, y in zip(a[key], b[key])), where
        else:
            assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), (where, key, a[key], b[key])


def play_both(gymnasium, tmp_path, num_envs: int, steps: int, mode: str, relabel: bool = False, **kwargs) -> int:
    """Play ``steps`` random steps through the vector and the shards; returns the env steps compared.
    With ``relabel``, a learner's next pass is labelled once every environment has played its share
    of the current one (and the episode it played on with), as a new label mid-pass is refused."""
    logs = (tmp_path / "shards.jsonl", tmp_path / "vector.jsonl")
    reference = shards(gymnasium, num_envs, mode, episode_log=logs[0], **kwargs)
    vector = gymnasium.make_vec("SokobanFairnessVector-v1", num_envs=num_envs, autoreset_mode=mode,
                                episode_log=logs[1], **kwargs)
    a, b = reference.reset(seed=5), vector.reset(seed=5)
    assert np.array_equal(a[0], b[0])
    same_infos(a[1], b[1], "reset")
    rng = np.random.default_rng(num_envs)
    compared = 0
    shares = np.array([len(range(i, 256, num_envs)) for i in range(num_envs)])
    ended = np.zeros(num_envs, dtype=int)  # episodes each environment ended since the last label
    for number in range(1, steps + 1):
        actions = rng.integers(0, 5, num_envs)
        a, b = reference.step(actions), vector.step(actions)
        for name, x, y in zip(("observation", "reward", "terminated", "truncated"), a[:4], b[:4]):
            assert x.dtype == y.dtype and np.array_equal(x, y), (number, name)
        same_infos(a[4], b[4], f"step {number}")
        compared += num_envs
        ended += a[2] | a[3]
        if relabel and (ended > shares).all():  # a learner's next update: a new pass at the next resets
            reference.call("set_update", number)
            vector.set_update(number)
            ended[:] = 0
    reference.close()
    vector.close()
    assert logs[0].read_bytes() == logs[1].read_bytes() and logs[0].stat().st_size > 0
    assert manifest_path(logs[0]).read_bytes() == manifest_path(logs[1]).read_bytes()
    return compared


def test_the_vector_plays_what_the_shards_play_over_100000_random_steps(gymnasium, tmp_path):
    from gymnasium.vector import AutoresetMode

    compared = 0
    cases = [  # (envs, steps, autoreset, settings): training draws shared by the shards, groups, passes
        (64, 1250, AutoresetMode.NEXT_STEP, {"observation": "grid"}),
        (48, 300, AutoresetMode.SAME_STEP, {"observation": "grid", "batch_size": 16, "rollout_n": 8, "update": 0}),
        (16, 400, AutoresetMode.NEXT_STEP, {"split": "validation", "relabel": True}),
        (32, 200, AutoresetMode.SAME_STEP, {"split": "validation", "observation": "grid", "relabel": True}),
    ]
    for number, (envs, steps, mode, settings) in enumerate(cases):
        folder = tmp_path / str(number)
        folder.mkdir()
        compared += play_both(gymnasium, folder, envs, steps, mode, **settings)
    assert compared >= 100_000


def test_its_sampler_draws_the_single_environments_boards_and_validation_is_the_256_in_order(gymnasium):
    ids = [row.task_id for row in load_training()]
    envs = gymnasium.make_vec("SokobanFairnessVector-v1", num_envs=16, batch_size=8, rollout_n=4)
    _, info = envs.reset(seed=9)
    draws = TrainingSampler(ids, 8, 4, 9)
    first, second = draws.next_batch().task_ids, draws.next_batch().task_ids
    assert list(info["task_id"]) == list(first[:16])  # environment i: positions i and i + 16 of each draw
    seen = [list(info["task_id"])]
    for _ in range(2):
        for _ in range(15):  # no-ops: every episode ends together at the horizon
            envs.step(np.zeros(16, dtype=np.int64))
        _, _, _, _, info = envs.step(np.zeros(16, dtype=np.int64))  # next-step autoreset: the next boards
        seen.append(list(info["task_id"]))
    assert seen[1] == list(first[16:]) and seen[2] == list(second[:16])
    validation = gymnasium.make_vec("SokobanFairnessVector-v1", num_envs=256, split="validation")
    _, info = validation.reset(seed=0)
    assert list(info["task_id"]) == [row.task_id for row in load_validation()]


def test_bad_input_is_refused_as_the_shards_refuse_it_before_anything_is_written(gymnasium, tmp_path):
    make = partial(gymnasium.make_vec, "SokobanFairnessVector-v1")
    with pytest.raises(ValueError, match="a vector of 300 environments over the 256 validation boards"):
        make(num_envs=300, split="validation", episode_log=tmp_path / "big.jsonl")
    with pytest.raises(ValueError, match="max_episode_steps=5 would cut episodes before the horizon of 15"):
        make(num_envs=2, max_episode_steps=5, episode_log=tmp_path / "cut.jsonl")
    with pytest.raises(ValueError, match="unknown keys"):
        make(num_envs=2, episode_log=tmp_path / "x.jsonl", settings={"learning_rate": 3e-4})
    with pytest.raises(ValueError, match="autoreset_mode must be one of NextStep, SameStep"):
        make(num_envs=2, autoreset_mode="Disabled")
    assert list(tmp_path.iterdir()) == []
    envs = make(num_envs=4, split="validation", episode_log=tmp_path / "v.jsonl")
    with pytest.raises(RuntimeError, match="call reset"):
        envs.step(np.zeros(4, dtype=np.int64))
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="environment 2: action must be 0-4, got 5"):
        envs.step(np.array([0, 1, 5, 0]))
    with pytest.raises(ValueError, match="actions must be 4 integers"):
        envs.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="no reset_mask"):
        envs.reset(options={"reset_mask": np.ones(4, bool)})
    envs.step(np.zeros(4, dtype=np.int64))
    with pytest.raises(RuntimeError, match="was cut at turn 1 of its 15"):
        envs.reset()  # its logged episodes under way would be lost
    envs.close()
    assert not (tmp_path / "v.jsonl").exists()


def test_a_new_label_in_the_middle_of_a_pass_is_refused_as_the_shards_refuse_it(gymnasium, tmp_path):
    log = tmp_path / "v.jsonl"
    envs = gymnasium.make_vec("SokobanFairnessVector-v1", num_envs=128, split="validation", episode_log=log)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(15):  # every environment ends its first of its two boards by the horizon
        envs.step(rng.integers(1, 5, 128))
    envs.set_update(10)
    with pytest.raises(RuntimeError, match=r"has logged 1 of its 2 boards of the validation pass at update 0 .* "
                                           r"the label was not taken"):
        for _ in range(15):
            envs.step(rng.integers(1, 5, 128))
    assert {record.update for record in read_episodes(log)} == {0}


def test_a_pass_the_log_holds_is_refused_from_a_second_vector_before_anything_is_written(gymnasium, tmp_path):
    log = tmp_path / "v.jsonl"
    first = gymnasium.make_vec("SokobanFairnessVector-v1", num_envs=256, split="validation", episode_log=log)
    first.reset(seed=0)
    for _ in range(15):  # one board each: the whole pass by the horizon
        first.step(np.ones(256, dtype=np.int64))
    first.close()
    before = log.read_bytes()
    assert len(before.splitlines()) == 256
    second = gymnasium.make_vec("SokobanFairnessVector-v1", num_envs=256, split="validation", episode_log=log)
    with pytest.raises(RuntimeError, match="is already in .* written by this or an earlier process: nothing was "
                                           "written"):
        second.reset()
    second.close()
    assert log.read_bytes() == before


def test_torch_threads_beyond_the_usable_cores_are_warned_of_once_at_the_first_update(gymnasium, monkeypatch):
    import os
    import sys
    import types
    import warnings

    from sokoban_tools.integrations.gymnasium_env import threads

    cores = len(os.sched_getaffinity(0))
    torch = types.SimpleNamespace(get_num_threads=lambda: cores + 3)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(threads, "_warned", False)
    envs = gymnasium.make_vec("SokobanFairnessVector-v1", num_envs=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        envs.reset(seed=0)  # no learner's update yet: nothing said
        assert not caught
        envs.set_update(1)
        envs.set_update(2)
        gymnasium.make("SokobanFairness-v1").unwrapped.set_update(3)
    assert len(caught) == 1 and caught[0].category is RuntimeWarning
    assert str(caught[0].message).startswith(f"torch runs {cores + 3} threads, more than the {cores} core(s)")
    assert "torch.set_num_threads(1)" in str(caught[0].message)
    monkeypatch.setattr(threads, "_warned", False)
    torch.get_num_threads = lambda: 1
    assert threads.oversubscription() is None  # one thread always fits


def test_a_vector_restored_from_its_state_plays_on_as_the_one_never_stopped(gymnasium, tmp_path):
    from gymnasium.vector import AutoresetMode

    for split, mode in (("train", AutoresetMode.SAME_STEP), ("validation", AutoresetMode.NEXT_STEP)):
        logs = [tmp_path / f"{split}-whole.jsonl", tmp_path / f"{split}-restored.jsonl"]
        settings = {"num_envs": 12, "split": split, "observation": "grid", "autoreset_mode": mode, "batch_size": 20,
                    "rollout_n": 2} if split == "train" else {"num_envs": 12, "split": split, "autoreset_mode": mode}
        whole = gymnasium.make_vec("SokobanFairnessVector-v1", episode_log=logs[0], **settings)
        whole.reset(seed=4)
        rng = np.random.default_rng(4)
        for _ in range(50):
            last = whole.step(rng.integers(0, 5, 12))[0]
        state, written = whole.state_dict(), logs[0].stat().st_size
        restored = gymnasium.make_vec("SokobanFairnessVector-v1", episode_log=logs[1], **settings)
        assert np.array_equal(restored.load_state_dict(state), last)  # the episodes under way, where they stand
        for number in range(120):
            actions = rng.integers(0, 5, 12)
            if number == 60 and split == "train":  # in validation a label mid-pass is refused (a test above)
                whole.set_update(60)
                restored.set_update(60)
            a, b = whole.step(actions), restored.step(actions)
            for x, y in zip(a[:4], b[:4]):
                assert np.array_equal(x, y), (split, number)
            same_infos(a[4], b[4], f"{split} step {number}")
        whole.close()
        restored.close()
        assert logs[0].read_bytes()[written:] == logs[1].read_bytes() and logs[1].stat().st_size > 0
