"""The drop-in runtime's driver logic, at full size, with in-process workers.

The same :class:`FairSokobanEnvs` drives Ray actors in ``test_verl_agent_envs_ray.py``;
here the ``local`` backend lets the trainer's real sizes (128 x 8 training workers,
128 validation workers) run on two cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from sokoban_published import PUBLISHED_FILES
from sokoban_tools.rules.board import from_lurd
from sokoban_tools.evaluation.replay import verify_log
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.runtime.sampler import TrainingSampler
from sokoban_tools.records.tasks import load_validation, load_training
from sokoban_tools.integrations.verl_agent.envs import build_sokoban_envs
from sokoban_tools.runtime.config import FAIRNESS_SETTINGS

ENV_KWARGS = {"dim_room": [6, 6], "num_boxes": 1, "max_steps": 15, "search_depth": 30}


def local(seed=0, env_num=1, group_n=1, mode="rgb_array", is_train=True, **options):
    return build_sokoban_envs(seed, env_num, group_n, mode, is_train=is_train, env_kwargs=ENV_KWARGS,
                              backend="local", **options)


@pytest.fixture(scope="module")
def evaluation():
    return load_validation(REPO / "fairness/evaluation.jsonl")


@pytest.fixture(scope="module")
def training():
    return load_training(REPO / "fairness/train.jsonl")


def play_to_the_end(envs, actions_of):
    """Step every worker until all report done, as verl-agent's loop does; returns the turns."""
    active = [True] * envs.num_processes
    turns = 0
    while any(active):
        _, _, dones, _ = envs.step(actions_of(turns))
        active = [a and not d for a, d in zip(active, dones)]
        turns += 1
    return turns


# --- Training draws ----------------------------------------------------------------------


def test_training__full_size_updates_are_the_samplers_draws_grouped_in_adjacent_workers(training):
    envs = local(seed=7, env_num=128, group_n=8)
    reference = TrainingSampler([row.task_id for row in training], 128, 8, seed=7)
    by_id = {row.task_id: row for row in training}
    for _ in range(3):
        observations, infos = envs.reset()
        expected = reference.next_batch().task_ids
        assert envs.task_ids == list(expected)
        assert len(set(expected)) == 128  # without replacement within the update
        assert all(len(set(expected[g * 8:(g + 1) * 8])) == 1 for g in range(128))
        assert len(observations) == len(infos) == 1024
        first = by_id[expected[0]].board
        assert envs.render(mode="list", env_idx=0) == envs.render(mode="list", env_idx=7)
        assert np.array_equal(observations[0], observations[7])
        assert envs.render(mode="state", env_idx=0).tolist() == [
            [6 if (s == 5 and f == 2) else s for s, f in zip(srow, frow)]
            for srow, frow in zip(first.room_state(), first.room_fixed)]


def test_training__validation_in_between_changes_no_draw():
    plain = local(seed=3, env_num=16, group_n=2)
    interleaved = local(seed=3, env_num=16, group_n=2)
    validation = local(seed=1003, env_num=128, is_train=False)
    for _ in range(4):
        plain.reset()
        if validation.chunks_played == validation.num_chunks:
            validation.end_pass()
            validation.begin_pass(update=1)
        validation.reset()
        validation.step([1] * 128)
        interleaved.reset()
        assert interleaved.task_ids == plain.task_ids


def test_training__closing_and_resetting_or_rebuilding_from_the_saved_state_continues_the_draws(tmp_path):
    straight = local(seed=11, env_num=8, group_n=2)
    released = local(seed=11, env_num=8, group_n=2)
    expected = []
    for _ in range(4):
        straight.reset()
        expected.append(straight.task_ids)
    released.reset()
    released.close()
    released.reset()
    assert [released.task_ids] == expected[1:2]
    checkpoint = tmp_path / "sampler.json"  # saved beside a checkpoint as the card shows
    checkpoint.write_text(json.dumps(released.sampler_state()))
    released.close()
    rebuilt = local(seed=11, env_num=8, group_n=2, sampler_state=json.loads(checkpoint.read_text()))
    draws = []
    for _ in range(2):
        rebuilt.reset()
        draws.append(rebuilt.task_ids)
    assert draws == expected[2:]


def test_training__a_saved_state_of_another_shape_is_refused():
    state = local(seed=1, env_num=8, group_n=2).sampler_state()
    with pytest.raises(ValueError, match="env_num=4"):
        local(seed=1, env_num=4, group_n=2, sampler_state=state)



def test_training__another_seeds_saved_state_is_refused_for_the_seed_given():
    state = local(seed=2, env_num=8, group_n=2).sampler_state()
    with pytest.raises(ValueError, match="continues the draws of seed 2, but seed=1 was given"):
        local(seed=1, env_num=8, group_n=2, sampler_state=state)

# --- Validation passes -------------------------------------------------------------------


def test_validation__128_workers_play_the_256_boards_in_stored_order_in_two_chunks(evaluation):
    envs = local(seed=1000, env_num=128, is_train=False)
    assert envs.begin_pass(update=0) == envs.num_chunks == 2
    seen = []
    for chunk in range(2):
        envs.reset()
        assert envs.chunks_played == chunk + 1
        seen += envs.task_ids
        play_to_the_end(envs, lambda turn: [1 + turn % 4] * 128)
    assert seen == [row.task_id for row in evaluation]
    records = envs.end_pass()
    assert [r.task_id for r in records] == seen and envs.passes_completed == 1
    assert {r.phase for r in records} == {"validation"} and {r.update for r in records} == {0}


def test_validation__a_pass_plays_each_board_once_and_a_reset_past_its_last_chunk_is_refused(evaluation):
    envs = local(seed=1000, env_num=64, is_train=False)
    with pytest.raises(RuntimeError, match="0 of 4 chunks played"):
        envs.end_pass()
    for _ in range(4):  # the first pass may start without begin_pass, at update 0
        envs.reset()
    with pytest.raises(RuntimeError, match="past the last of the 4 chunks"):
        envs.reset()
    assert envs.chunks_played == 4 and envs.passes_completed == 0  # the refused reset changed nothing
    assert [r.task_id for r in envs.end_pass()] == [row.task_id for row in evaluation]
    with pytest.raises(RuntimeError, match="pass 2 was not begun: call begin_pass"):
        envs.reset()
    assert envs.begin_pass(update=5) == 4
    envs.reset()
    assert envs.task_ids[0] == evaluation[0].task_id and envs.validation_update == 5
    with pytest.raises(RuntimeError, match="stopped after chunk 1 of 4"):
        envs.begin_pass(update=6)


def test_validation__begin_pass_after_a_full_pass_ends_it_and_keeps_its_records(evaluation):
    envs = local(seed=1000, env_num=128, is_train=False)
    for _ in range(2):
        envs.reset()
    envs.begin_pass(update=3)
    assert envs.passes_completed == 1
    assert sorted(r.task_id for r in envs.take_episodes()) == sorted(row.task_id for row in evaluation)


def test_validation__stored_solutions_win_every_board_and_the_records_say_so(evaluation, tmp_path):
    log = tmp_path / "episodes.jsonl"
    envs = local(seed=1000, env_num=128, mode="tiny_rgb_array", is_train=False, method="oracle",
                 run="r1", episode_log=log)
    envs.begin_pass(update=5)
    by_id = {row.task_id: row for row in evaluation}
    for _ in range(envs.num_chunks):
        envs.reset()
        solutions = [from_lurd(by_id[task].shortest_solution) for task in envs.task_ids]
        play_to_the_end(envs, lambda turn: [s[turn] if turn < len(s) else 0 for s in solutions])
    records = envs.end_pass()
    assert all(r.won and r.actions == by_id[r.task_id].shortest_solution_length for r in records)
    assert all(r.episode_return == pytest.approx(-0.1 * r.actions + 11) for r in records)
    assert sorted(read_episodes(log), key=lambda r: r.task_id) == sorted(records, key=lambda r: r.task_id)
    assert {(r.method, r.run, r.update) for r in records} == {("oracle", "r1", 5)}
    assert verify_log(log).verified == 256
    assert {r.evaluation_sha256 for r in records} == {PUBLISHED_FILES["fairness/evaluation.jsonl"]["sha256"]}


# --- Episode records ---------------------------------------------------------------------


def test_episodes__end_at_the_first_done_ignore_later_steps_and_count_action_0_in_the_return_only():
    envs = local(seed=0, env_num=2, group_n=1)
    envs.reset()
    for _ in range(15):  # action 0 never counts a step, so worker 1 is never done
        envs.step([1, 0])
    _, _, dones, _ = envs.step([1, 0])
    assert dones == [False, False]  # worker 0 is at step 16: done went back to false
    [finished] = envs.take_episodes()
    assert (finished.actions, finished.won, finished.moves) == (15, False, "U" * 15)
    assert finished.episode_return == pytest.approx(-1.5)
    envs.reset()
    [unfinished] = envs.take_episodes()
    assert (unfinished.actions, unfinished.won, unfinished.phase, unfinished.moves) == (0, False, "training", "0" * 16)
    assert unfinished.episode_return == pytest.approx(-1.6)
    assert envs.take_episodes() == []


# --- Bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(("env_kwargs", "named"), [
    ({"dim_room": [7, 7]}, "dim_room"),
    ({"num_boxes": 2}, "num_boxes"),
    ({"search_depth": 300}, "search_depth"),
])
def test_bad_input__settings_other_than_the_boards_are_refused_naming_the_fairness_settings(env_kwargs, named):
    with pytest.raises(ValueError, match=named) as refused:
        build_sokoban_envs(0, 1, 1, env_kwargs={**ENV_KWARGS, **env_kwargs}, backend="local")
    assert FAIRNESS_SETTINGS in str(refused.value)


@pytest.mark.parametrize("dim_room", [[6, 6], (6, 6), np.array([6, 6])])
def test_settings__the_boards_settings_are_accepted_as_any_sequence(dim_room):
    assert build_sokoban_envs(0, 1, 1, env_kwargs={**ENV_KWARGS, "dim_room": dim_room}, backend="local").reset()


@pytest.mark.parametrize(("options", "message"), [
    ({"env_kwargs": {"max_step": 15}}, "unknown keys"),
    ({"env_kwargs": {"max_steps": 0}}, "max_steps"),
    ({"mode": "human"}, "mode must be one of"),
    ({"env_num": 0}, "env_num must be a positive integer"),
    ({"is_train": False, "env_num": 100}, "does not divide the 256"),
    ({"is_train": False, "env_num": 128, "group_n": 2}, "group_n must be 1"),
    ({"backend": "threads"}, "backend must be one of"),
    ({"dataset_dir": REPO, "hub_revision": "0" * 40}, "not both"),
])
def test_bad_input__impossible_runtimes_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        build_sokoban_envs(**{"backend": "local", **options})


@pytest.mark.parametrize(("options", "error", "named"), [
    ({"method": ""}, ValueError, "method must be a non-empty string"),
    ({"method": None}, TypeError, "method must be a string"),
    ({"run": "  "}, ValueError, "run must be a non-empty string"),
    ({"is_train": False, "seed": None, "env_num": 128}, TypeError, "seed must be a non-negative integer"),
    ({"seed": -1}, ValueError, "seed must be a non-negative integer"),
    ({"is_train": "False"}, TypeError, "is_train must be True or False"),
    ({"is_train": 0}, TypeError, "is_train must be True or False"),
    ({"env_kwargs": [("max_steps", 15)]}, TypeError, "env_kwargs must be a mapping"),
    ({"env_num": 2.0}, TypeError, "env_num must be a positive integer"),
    ({"group_n": True}, TypeError, "group_n must be a positive integer"),
    ({"mode": ["rgb_array"]}, ValueError, "mode must be one of"),
    ({"resources_per_worker": 0.1}, TypeError, "resources_per_worker must be a mapping"),
    ({"resources_per_worker": {"num_cpus": -1}}, ValueError, "resources_per_worker num_cpus"),
    ({"resources_per_worker": {"num_cpus": "0.1"}}, ValueError, "resources_per_worker num_cpus"),
    ({"resources_per_worker": {"num_cpus": 0.1, "cpus": 1}}, ValueError, "resources_per_worker cpus"),
    ({"envs_per_actor": 0}, ValueError, "envs_per_actor must be a positive integer"),
    ({"max_restarts": "3"}, TypeError, "max_restarts must be a non-negative integer"),
    ({"sampler_state": "{}"}, TypeError, "sampler_state must be a dict"),
    ({"episode_log": 5}, TypeError, "episode_log must be a path"),
])
def test_bad_input__every_argument_is_checked_before_a_worker_starts_naming_it(options, error, named):
    with pytest.raises(error, match=named):
        build_sokoban_envs(**{"env_kwargs": ENV_KWARGS, "backend": "ray", **options})
    # refused before Ray was started, let alone a worker
    assert "ray" not in sys.modules or not sys.modules["ray"].is_initialized()


def test_bad_input__an_episode_log_that_cannot_take_records_is_refused_at_build(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for log, named in [(tmp_path, "is a directory"), (tmp_path / "missing" / "log.jsonl", "does not exist"),
                       (fifo, "not a regular file"), ("", "must name a file")]:
        with pytest.raises(ValueError, match=named) as refused:
            local(episode_log=log)
        assert "episode_log" in str(refused.value)
    assert not (tmp_path / "missing").exists()


def test_bad_input__a_log_replaced_by_a_fifo_after_build_is_refused_without_hanging(tmp_path):
    log = tmp_path / "episodes.jsonl"
    envs = local(env_num=2, episode_log=log)
    envs.reset()
    os.mkfifo(log)  # no reader: a blocking open would wait forever
    with pytest.raises(OSError, match=f"episode log {log}"):
        envs.reset()  # ends and records the open episodes


@pytest.mark.parametrize(("actions", "message"), [
    ([1, 2, 3], "expected 4, got 3"),
    ([1, 2, 5, 1], "worker 2: action must be"),
    ([1, 2.0, 1, 1], "worker 1: action must be"),
    ([1, 1, 1, None], "worker 3: action must be"),
    ([True, 1, 1, 1], "worker 0: action must be"),
])
def test_bad_input__wrong_actions_are_refused_with_the_worker_index_before_any_worker_moves(actions, message):
    envs = local(env_num=2, group_n=2)
    envs.reset()
    before = envs.render(mode="state")
    with pytest.raises(ValueError, match=message):
        envs.step(actions)
    assert all(np.array_equal(a, b) for a, b in zip(envs.render(mode="state"), before))


def test_bad_input__numpy_actions_are_accepted():
    envs = local(env_num=2)
    envs.reset()
    assert len(envs.step(np.array([1, 0]))[0]) == 2


# --- The worker's imports and the card's example ------------------------------------------


def test_worker__importing_the_environment_loads_neither_datasets_nor_pyarrow_nor_pillow():
    program = ("import sys, sokoban_tools.runtime.env\n"
               "print(sorted({m.split('.')[0] for m in sys.modules} & {'datasets', 'pyarrow', 'PIL', 'ray'}))")
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_workers__a_pool_is_shared_by_the_phases_built_on_it_and_by_no_other():
    """make_fair_envs builds both phases on a WorkerPool of its own: they share its workers (a
    phase's reset ends the other's episodes), while environments on another pool keep theirs."""
    from sokoban_tools.runtime.workers import WorkerPool

    pool, other = WorkerPool(), WorkerPool()
    training = local(seed=3, env_num=2, group_n=2, pool=pool)
    validation = local(seed=1003, env_num=4, is_train=False, pool=pool)
    apart = local(seed=3, env_num=2, group_n=2, pool=other)
    try:
        assert training.workers is validation.workers and apart.workers is not training.workers
        training.reset()
        apart.reset()
        validation.reset()  # takes the pool's workers: training's episodes end, apart's do not
        assert len(training.take_episodes()) == 4 and apart.take_episodes() == []
        apart.step([1, 1, 1, 1])
        with pytest.raises(RuntimeError, match="call reset\\(\\) first"):
            training.step([1, 1, 1, 1])
    finally:
        for envs in (training, validation, apart):
            envs.close()
