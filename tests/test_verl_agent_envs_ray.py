"""The drop-in runtime on real Ray actors: one local Ray for the module, few actors (two cores).

Ray is a test dependency (``pip install -e '.[test]'``); without it these tests
skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import random
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import REPO
from cpu_burners import cpu_burners
from unavailable import unavailable
from sokoban_render import render_rgb
from sokoban_tools.rules.board import DOWN, LEFT, RIGHT, UP, Board, from_lurd
from sokoban_tools.runtime.config import runtime_config
from sokoban_tools.runtime.env import FairSokobanEnv, render
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.runtime.sampler import TrainingSampler
from sokoban_tools.records.tasks import load_validation, load_training
from sokoban_tools.integrations.verl_agent.envs import FairSokobanEnvs, build_sokoban_envs
from sokoban_tools.runtime import workers as worker_pool
from sokoban_tools.runtime.recovery import WorkersLost
from traces import RENDERS, boards_of, load_traces, mismatches

pytestmark = pytest.mark.slow

ENV_KWARGS = {"dim_room": [6, 6], "num_boxes": 1, "max_steps": 15, "search_depth": 30}
CPUS = 2


@pytest.fixture(scope="module")
def ray():
    try:
        import ray
    except ImportError as err:
        unavailable(f"ray is not installed ({err}); pip install -e '.[test]'")
    ray.init(num_cpus=CPUS, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def build(seed, env_num, group_n, mode="rgb_array", is_train=True, **options):
    return build_sokoban_envs(seed, env_num, group_n, mode, is_train=is_train, env_kwargs=ENV_KWARGS, **options)


@pytest.fixture(scope="module")
def training(ray):
    """Training environments: 2 boards x 2 copies, 4 actors."""
    envs = build(5, 2, 2)
    yield envs
    envs.close()


@pytest.fixture
def validation(ray):
    """Validation environments in text mode: 4 actors, so 64 chunks a pass; new for each
    test, since a test may leave a pass unfinished."""
    envs = build(1005, 4, 1, mode="tiny_rgb_array", is_train=False)
    yield envs
    envs.close()


@pytest.fixture(scope="module")
def rows():
    training = {row.task_id: row for row in load_training(REPO / "fairness/train.jsonl")}
    return training, load_validation(REPO / "fairness/evaluation.jsonl")


def test_ray__the_environments_are_packed_into_ray_actors_one_call_each(ray, training):
    assert training.num_processes == 4 and training.workers.places == [(0, slot) for slot in range(4)]
    assert len(training.workers.actors) == 1  # the default packs up to 128 environments an actor
    assert all(isinstance(actor, ray.actor.ActorHandle) for actor in training.workers.actors)


def test_ray__reset_step_and_render_return_verl_agents_shapes_and_types(ray, training):
    assert training.mode == "rgb_array"
    observations, infos = training.reset()
    assert len(observations) == len(infos) == 4
    assert all(o.shape == (96, 96, 3) and o.dtype == np.uint8 for o in observations)
    assert infos == [{"won": False}] * 4
    observations, rewards, dones, infos = training.step([1, 2, 0, 4])
    assert [len(x) for x in (observations, rewards, dones, infos)] == [4] * 4
    assert all(o.shape == (96, 96, 3) and o.dtype == np.uint8 for o in observations)
    assert all(type(r) is float for r in rewards) and all(type(d) is bool for d in dones)
    assert all(set(i) == {"action_is_effective", "won"} and all(type(v) is bool for v in i.values()) for i in infos)
    assert infos[2] == {"action_is_effective": False, "won": False} and rewards[2] == -0.1
    grids = training.render(mode="tiny_rgb_array")  # drawn here from the positions the actors sent
    [held] = ray.get([actor.__ray_call__.remote(lambda held: [env.render("tiny_rgb_array") for env in held.envs])
                      for actor in training.workers.actors])
    assert grids == held  # what the actors' own environments render
    assert len(grids) == 4 and all(isinstance(g, str) and g.count("\n") == 5 for g in grids)
    lists = training.render(mode="list")
    assert all(isinstance(rows, list) and len(rows) == 6 and all(isinstance(r, str) for r in rows) for rows in lists)
    states = training.render(mode="state")
    assert all(s.shape == (6, 6) for s in states)
    images = training.render()
    assert all(np.array_equal(a, b) for a, b in zip(images, observations))
    assert training.render(mode="tiny_rgb_array", env_idx=3) == grids[3]


def test_ray__validation_covers_the_256_boards_once_in_stored_order_over_its_chunks(validation, rows):
    _, evaluation = rows
    assert validation.begin_pass(update=0) == validation.num_chunks == 64
    seen = []
    for _ in range(validation.num_chunks):
        observations, _ = validation.reset()
        seen += validation.task_ids
        expected = [render(row.board, "tiny_rgb_array") for row in evaluation[len(seen) - 4:len(seen)]]
        assert observations == expected
        validation.step([0] * 4)
    assert seen == [row.task_id for row in evaluation]
    records = validation.end_pass()
    assert [r.task_id for r in records] == seen
    assert all(r.phase == "validation" and r.actions == 0 and not r.won for r in records)


def test_ray__training_draws_are_the_samplers_grouped_and_untouched_by_validation(training, validation, rows):
    by_id, _ = rows
    # The module's training envs were built with seed 5; other tests may have drawn updates.
    reference = TrainingSampler(list(by_id), 2, 2, seed=5)
    for _ in range(training.sampler_state()["updates_drawn"]):
        reference.next_batch()
    for _ in range(3):
        validation.reset()
        observations, _ = training.reset()
        expected = list(reference.next_batch().task_ids)
        assert training.task_ids == expected
        assert expected[0] == expected[1] != expected[2] == expected[3]
        for task_id, observation in zip(expected, observations):
            board = by_id[task_id].board
            assert np.array_equal(observation, render_rgb(board.room_fixed, board.room_state()))


def test_ray__steps_after_done_continue_as_the_original_and_the_record_keeps_the_first_end(ray, rows):
    by_id, _ = rows
    envs = build(9, 1, 2)  # one board, two workers
    try:
        envs.reset()
        board = by_id[envs.task_ids[0]].board
        solution = from_lurd(by_id[envs.task_ids[0]].shortest_solution)
        wander = ([UP, DOWN] * 9)[:len(solution) + 2]  # worker 1 walks to and fro
        reference = FairSokobanEnv()
        reference.reset(board)
        expected = [reference.step(action)[2] for action in wander]
        assert not any(expected)  # worker 1's episode stays open
        back = {UP: DOWN, DOWN: UP, LEFT: RIGHT, RIGHT: LEFT}[solution[-1]]  # never pushes the box
        steps = [envs.step(pair) for pair in zip(solution + [back, 0], wander)]
        _, rewards, dones, infos = zip(*steps)
        assert [r[0] for r in rewards[-3:]] == pytest.approx([10.9, 9.9, -0.1])
        assert [d[0] for d in dones] == [False] * (len(solution) - 1) + [True, True, False]
        assert [i[0]["won"] for i in infos[-3:]] == [True, True, False]
        assert [d[1] for d in dones] == expected
        [record] = envs.take_episodes()  # worker 1 has not reported done
        assert (record.won, record.actions) == (True, len(solution))
        assert record.episode_return == pytest.approx(10.9 - 0.1 * (len(solution) - 1))
    finally:
        envs.close()


def test_ray__past_the_horizon_steps_count_on_and_done_goes_back_to_false(ray, rows):
    by_id, _ = rows
    envs = build(2, 1, 1)
    try:
        envs.reset()
        reference = FairSokobanEnv()
        reference.reset(by_id[envs.task_ids[0]].board)
        actions = [UP, DOWN] * 8 + [UP]
        expected = [reference.step(action)[2] for action in actions]
        assert expected == [False] * 14 + [True, False, False]  # this board is not won by the walk
        assert [envs.step([action])[2][0] for action in actions] == expected
    finally:
        envs.close()


def test_ray__bad_actions_are_refused_with_the_worker_index(training):
    training.reset()
    with pytest.raises(ValueError, match="expected 4, got 5"):
        training.step([1] * 5)
    with pytest.raises(ValueError, match="worker 1: action must be"):
        training.step([1, 7, 1, 1])
    with pytest.raises(ValueError, match="worker 3: action must be"):
        training.step([1, 1, 1, "left"])


def test_ray__a_worker_keeps_the_board_and_its_episodes_moves_nothing_of_the_stored_row(ray, training, rows):
    by_id, _ = rows
    training.reset()
    [envs] = ray.get([actor.__ray_call__.remote(lambda held: held.envs) for actor in training.workers.actors])
    for env, task_id in zip(envs, training.task_ids):
        row = by_id[task_id]
        state = vars(env)
        assert set(state) == {"mode", "max_steps", "_board", "_steps", "tally"}
        assert state["tally"].played == []  # the episode's own moves, nothing of the stored row
        assert type(state["_board"]) is Board and state["_board"] == row.board
        assert [f for f in vars(state["_board"])] == ["room_fixed", "player", "box"]
        flat = pickle.dumps(state)
        assert task_id.encode() not in flat and row.shortest_solution.encode() not in flat


def test_ray__closing_and_restarting_workers_leaves_the_training_draws_unchanged(ray):
    straight = build(21, 2, 1)
    expected = []
    for _ in range(3):
        observations, _ = straight.reset()
        expected.append((straight.task_ids, [o.tobytes() for o in observations]))
    straight.close()
    released = build(21, 2, 1)
    got = []
    observations, _ = released.reset()
    got.append((released.task_ids, [o.tobytes() for o in observations]))
    released.close()  # released between phases: new actors on the next reset
    observations, _ = released.reset()
    got.append((released.task_ids, [o.tobytes() for o in observations]))
    state = released.sampler_state()
    released.close()
    rebuilt = build(21, 2, 1, sampler_state=state)  # or rebuilt from the saved sampler
    observations, _ = rebuilt.reset()
    got.append((rebuilt.task_ids, [o.tobytes() for o in observations]))
    rebuilt.close()
    assert got == expected


def plain(value):
    """An observation, render or list of them in a form ``==`` compares exactly."""
    if isinstance(value, np.ndarray):
        return value.shape, str(value.dtype), value.tobytes()
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def play(envs, turns, policy, fault=None):
    """``turns`` steps of random actions after a reset, every environment stepped every turn as
    verl-agent's loop does; ``fault(turn)`` runs before each step. Everything returned, in order."""
    seen = [plain(envs.reset())]
    for turn in range(turns):
        if fault:
            fault(turn)
        seen.append(plain(envs.step([policy.randrange(5) for _ in range(envs.num_processes)])))
        seen.append(envs.render(mode="tiny_rgb_array"))  # what verl-agent's manager renders each turn
    seen.append(plain(envs.render(mode="list")))
    return seen


def session(modes, envs_per_actor, fault=None, validation_fault=None, max_restarts=3):
    """For each of ``modes``, training (2 boards x 2) and validation (4 boards a chunk), all
    sharing one set of workers: a training update, two validation chunks, another update;
    ``fault`` is made for the first update's environments, ``validation_fault`` for the first
    chunk's. Outputs, records, the number of actors and the restarts the driver saw of each."""
    policy = random.Random(7)
    options = {"envs_per_actor": envs_per_actor, "max_restarts": max_restarts}
    phases = [(build(41, 2, 2, mode=mode, **options),
               build(1041, 4, 1, mode=mode, is_train=False, **options)) for mode in modes]
    seen = []
    try:
        for training, validation in phases:
            assert training.workers is validation.workers  # one set of live workers for both phases
            seen += play(training, 16, policy, fault and fault(training))
            seen += play(validation, 16, policy, validation_fault and validation_fault(validation))
            seen += play(validation, 6, policy)
            seen += play(training, 9, policy)
        actors, restarts = len(training.workers.actors), list(training.workers.restarts)
    finally:
        training.close()  # releases the workers every phase shares
    records = [record for both in phases for envs in both for record in envs.take_episodes()]
    return seen, records, actors, restarts


def test_ray__packed_and_one_per_actor_give_identical_results_and_records_in_all_four_modes(ray):
    modes = ["rgb_array", "tiny_rgb_array", "list", "state"]
    one, one_records, one_actors, _ = session(modes, envs_per_actor=1)
    packed, packed_records, packed_actors, _ = session(modes, envs_per_actor=None)
    assert (one_actors, packed_actors) == (4, 1)
    assert packed == one and packed_records == one_records
    assert [r.phase for r in one_records] == (["training"] * 8 + ["validation"] * 8) * 4


def test_ray__training_and_validation_never_hold_separate_live_workers(ray):
    training = build(43, 2, 2)
    validation = build(1043, 4, 1, is_train=False)
    try:
        actors = list(training.workers.actors)
        training.reset()
        training.step([1, 1, 1, 1])
        validation.reset()  # takes the shared workers: training's open episodes end here
        assert validation.workers.actors == actors
        assert [r.phase for r in training.take_episodes()] == ["training"] * 4
        with pytest.raises(RuntimeError, match="call reset\\(\\) first"):
            training.step([1, 1, 1, 1])
        training.reset()
        with pytest.raises(RuntimeError, match="call reset\\(\\) first"):
            validation.render()
        assert len(actors) == 1 and cpus_in_use(ray, 0.4) == pytest.approx(0.4)  # 4 environments x 0.1
    finally:
        training.close()
        validation.close()


def cpus_in_use(ray, expected, timeout=30):
    """The CPUs Ray has granted, once they settle at ``expected`` (or after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        used = CPUS - ray.available_resources().get("CPU", 0)
        if abs(used - expected) < 1e-6 or time.monotonic() > deadline:
            return used
        time.sleep(0.2)


def killer(ray, at_turn, actor_index):
    """A fault for :func:`play`: kill one actor (Ray may restart it) before step ``at_turn``."""
    def fault_of(envs):
        def fault(turn):
            if turn == at_turn:
                ray.kill(envs.workers.actors[actor_index], no_restart=False)
        return fault
    return fault_of


def restarted_killer(ray, at_turn, actor_index):
    """A fault for :func:`play`: kill one actor after step ``at_turn - 1`` and wait until Ray has
    restarted it empty, as happens while a trainer's model generates between two steps."""
    def fault_of(envs):
        def fault(turn):
            if turn == at_turn:
                actor = envs.workers.actors[actor_index]
                ray.kill(actor, no_restart=False)
                deadline = time.monotonic() + 180  # a restart takes seconds, more on saturated CPUs
                while time.monotonic() < deadline:
                    try:
                        if ray.get(actor.__ray_call__.remote(lambda held: held.envs), timeout=5) == [None] * 2:
                            return  # the restarted actor holds no environment
                    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                        pass  # not restarted yet
                    time.sleep(0.05)
                raise AssertionError("Ray did not restart the killed actor within 180 s")
        return fault
    return fault_of


def test_ray__an_actor_killed_and_restarted_between_steps_is_rebuilt_in_training_and_validation(ray):
    """The actor dies while the model would generate, Ray restarts it empty before the next
    step: the driver finds it empty by its count of calls and rebuilds it step-exact."""
    clean, clean_records, _, _ = session(["tiny_rgb_array"], envs_per_actor=2)
    rng = random.Random()
    turns = rng.randrange(1, 16), rng.randrange(1, 16)
    faulty, faulty_records, _, _ = session(["tiny_rgb_array"], envs_per_actor=2,
                                        fault=restarted_killer(ray, turns[0], rng.randrange(2)),
                                        validation_fault=restarted_killer(ray, turns[1], rng.randrange(2)))
    assert len(clean_records) == 16
    assert faulty == clean and faulty_records == clean_records, f"killed before steps {turns}"


def test_ray__an_actor_killed_mid_training_episode_is_restored_step_exact(ray):
    clean, clean_records, _, _ = session(["rgb_array"], envs_per_actor=2)
    turn = random.Random().randrange(1, 16)
    faulty, faulty_records, _, restarts = session(["rgb_array"], envs_per_actor=2, fault=killer(ray, turn, 1))
    assert faulty == clean and faulty_records == clean_records, f"killed before step {turn}"
    assert restarts == [0, 1]


def slow_restarts(seconds):
    """An :class:`EnvSlice` whose restarts take ``seconds``: its constructor waits when Ray
    reconstructs it, as a restart does on a saturated node (Ray answers every call meanwhile
    with ``ActorUnavailableError: The actor is restarting``). Defined here, so Ray ships it by value."""
    class SlowRestartSlice(worker_pool.EnvSlice):
        def __init__(self, size):
            super().__init__(size)
            import ray
            if ray.get_runtime_context().was_current_actor_reconstructed:
                time.sleep(seconds)
    return SlowRestartSlice


def test_ray__an_actor_still_restarting_is_waited_for_and_each_death_spends_one_restart(ray, monkeypatch):
    """Each actor killed once, with one restart allowed, and restarts of 4 s: every call in
    those seconds is refused as "restarting", which must be waited for, not counted as deaths."""
    clean, clean_records, _, _ = session(["tiny_rgb_array"], envs_per_actor=2)
    monkeypatch.setattr(worker_pool, "EnvSlice", slow_restarts(4))
    rng = random.Random()
    turns = rng.randrange(1, 16), rng.randrange(1, 16)
    faulty, faulty_records, _, restarts = session(["tiny_rgb_array"], envs_per_actor=2, max_restarts=1,
                                                  fault=killer(ray, turns[0], 0),
                                                  validation_fault=killer(ray, turns[1], 1))
    assert faulty == clean and faulty_records == clean_records, f"killed before steps {turns}"
    assert restarts == [1, 1]


def test_ray__on_saturated_cpus_actors_killed_in_training_and_validation_are_rebuilt_step_exact(ray):
    """Twice as many CPU burners as cores while one actor is killed in the training rollout and
    again in the validation chunk (its whole budget of two restarts), and the other is killed
    and restarted empty between two validation steps: the outputs and records equal a clean run."""
    clean, clean_records, _, _ = session(["rgb_array"], envs_per_actor=2)
    rng = random.Random()
    turns = rng.randrange(1, 16), rng.randrange(1, 16)

    def validation_faults(envs):
        kill, kill_and_wait = killer(ray, turns[1], 0)(envs), restarted_killer(ray, 16 - turns[1], 1)(envs)
        return lambda turn: (kill(turn), kill_and_wait(turn))

    with cpu_burners():
        faulty, faulty_records, _, restarts = session(["rgb_array"], envs_per_actor=2, max_restarts=2,
                                                      fault=killer(ray, turns[0], 0), validation_fault=validation_faults)
    assert faulty == clean and faulty_records == clean_records, f"killed before steps {turns}"
    assert restarts == [2, 1]


def test_ray__an_actor_whose_restart_never_ends_is_lost_after_the_time_bound(ray, monkeypatch):
    monkeypatch.setattr(worker_pool, "EnvSlice", slow_restarts(3600))
    envs = build(3, 2, 2, envs_per_actor=2, pool=worker_pool.WorkerPool())
    try:
        envs.reset()
        lost = envs.task_ids[2:]
        envs.workers.restart_timeout = 5
        actor = envs.workers.actors[1]
        ray.kill(actor, no_restart=False)
        deadline = time.monotonic() + 120  # a kill is asynchronous: step once the old process is gone
        while time.monotonic() < deadline:
            try:
                ray.get(actor.ping.remote(), timeout=5)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                break
            time.sleep(0.05)
        started = time.monotonic()
        with pytest.raises(WorkersLost) as failed:
            envs.step([1, 1, 1, 1])
        waited = time.monotonic() - started
        message = str(failed.value)
        assert "environments [2, 3] are lost" in message and "did not answer within 5 s" in message
        assert f"2: {lost[0]}" in message and f"3: {lost[1]}" in message
        assert 4.9 < waited < 60  # the whole bound was waited (Ray's own timeout may end a hair early)
    finally:
        envs.close()


def validation_pass(envs_per_actor, kill=None):
    """One validation pass of 16 environments a chunk (16 chunks), 8 turns of random actions
    each; ``kill`` is (chunk, turn, actor index). Outputs and the pass's records."""
    policy = random.Random(11)
    envs = build(1047, 16, 1, mode="tiny_rgb_array", is_train=False, envs_per_actor=envs_per_actor)
    try:
        seen = []
        for chunk in range(envs.begin_pass(update=4)):
            fault = killer(ray_module(), kill[1], kill[2])(envs) if kill and kill[0] == chunk else None
            seen += play(envs, 8, policy, fault)
        return seen, envs.end_pass()
    finally:
        envs.close()


def ray_module():
    import ray
    return ray


def test_ray__an_actor_killed_mid_validation_pass_is_restored_and_the_pass_completes(ray):
    clean, clean_records = validation_pass(envs_per_actor=6)  # 3 actors: 6, 6 and 4 environments
    rng = random.Random()
    kill = (rng.randrange(16), rng.randrange(8), rng.randrange(3))
    faulty, faulty_records = validation_pass(envs_per_actor=6, kill=kill)
    assert len(clean_records) == 256
    assert faulty == clean and faulty_records == clean_records, f"killed at (chunk, turn, actor) {kill}"


def test_ray__a_restart_limit_reached_fails_naming_the_environments_and_boards_lost(ray):
    envs = build(3, 2, 2, envs_per_actor=2, max_restarts=1)
    try:
        envs.reset()
        lost = envs.task_ids[2:]
        for _ in range(2):  # one restart allowed, two deaths
            ray.kill(envs.workers.actors[1], no_restart=False)
            time.sleep(0.5)
        with pytest.raises(WorkersLost) as failed:
            envs.step([1, 1, 1, 1])
        message = str(failed.value)
        assert "environments [2, 3] are lost" in message and "max_restarts=1" in message
        assert f"2: {lost[0]}" in message and f"3: {lost[1]}" in message
    finally:
        envs.close()


@pytest.mark.parametrize(("options", "named"), [
    ({"resources_per_worker": {"num_gpus": 1}}, "exceeds every node"),
    ({"resources_per_worker": {"num_cpus": 3}}, "exceeds every node"),
    ({"resources_per_worker": {"num_cpus": 0.1}, "envs_per_actor": 30}, "envs_per_actor=30"),
    ({"resources_per_worker": {"num_cpus": 0.5}, "env_num": 8}, "need CPU 4"),
])
def test_ray__an_unsatisfiable_resource_request_fails_at_build(ray, options, named):
    with pytest.raises(ValueError, match=named):
        build_sokoban_envs(**{"seed": 1, "env_num": 2, "env_kwargs": ENV_KWARGS, **options})


@pytest.mark.parametrize("mode", ["rgb_array", "tiny_rgb_array"])
def test_ray__every_trace_episode_replays_through_the_drop_in_on_actors(ray, mode):
    """Each trace of ``mode`` is one environment of a validation chunk holding them all (two
    actors): its actions are stepped (action 0 once it has ended, which moves nothing), and the
    observations, rewards, dones and infos the drop-in returns, its three renders after each
    call and the actors' step counters must equal the recording."""
    everything = load_traces()
    traces, boards = zip(*[(trace, board) for trace, board in zip(everything, boards_of(everything))
                           if trace["mode"] == mode])
    rows = [SimpleNamespace(task_id=f"trace-{number}", board=board) for number, board in enumerate(boards)]
    config = runtime_config(0, len(rows), 1, mode, {"num_cpus": 0}, False, ENV_KWARGS, method="traces", run=None,
                            episode_log=None, sampler_state=None, backend="ray", envs_per_actor=-(-len(rows) // 2),
                            max_restarts=0)
    envs = FairSokobanEnvs(rows, "0" * 64, config)
    try:
        def after_call(envs):
            renders = [envs.render(mode=name) for name in RENDERS]
            counters = ray.get([actor.__ray_call__.remote(lambda held: [env.num_env_steps for env in held.envs])
                                for actor in envs.workers.actors])
            steps = [counters[number][slot] for number, slot in envs.workers.places]
            return [[render[i] for render in renders] + [steps[i]] for i in range(len(rows))]

        envs.begin_pass(0)
        observations, infos = envs.reset()
        results = [[(observation, info), *later] for observation, info, later in
                   zip(observations, infos, after_call(envs))]
        for number in range(max(len(trace["actions"]) for trace in traces)):
            playing = [number < len(trace["actions"]) for trace in traces]
            actions = [trace["actions"][number] if live else 0 for trace, live in zip(traces, playing)]
            stepped = zip(*envs.step(actions), after_call(envs))
            for result, live, (observation, reward, done, info, later) in zip(results, playing, stepped):
                if live:
                    result += [(observation, reward, done, info), *later]
        found = [problem for trace, result in zip(traces, results) for problem in mismatches(trace, result)]
        assert len(traces) == 600 and not found, "\n".join(found[:20])
    finally:
        envs.close()


def test_ray__close_leaves_no_actor(ray, training, validation):
    training.reset()
    actors = training.workers.actors
    training.close()
    validation.close()
    assert training.workers is None and validation.workers is None
    for actor in actors:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.ping.remote())
    assert cpus_in_use(ray, 0) == 0  # every actor's CPU share returned


def test_example__the_cards_runtime_example_runs_on_ray_and_logs_every_episode(tmp_path):
    if importlib.util.find_spec("ray") is None:
        unavailable("ray is not installed; pip install -e '.[test]'")
    done = subprocess.run(
        [sys.executable, "-m", "examples.verl_agent_runtime"], cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("update 0: validation success 0.")
    log = read_episodes(tmp_path / "episodes.jsonl")
    validation = [r for r in log if r.phase == "validation"]
    assert len(validation) == 2 * 256 and {r.update for r in validation} == {0, 2}
    evaluation = [row.task_id for row in load_validation(REPO / "fairness/evaluation.jsonl")]
    for update in (0, 2):
        assert sorted(r.task_id for r in validation if r.update == update) == sorted(evaluation)
    assert len(log) - len(validation) == 3 * 4  # three draws of 2 boards x 2 copies
    assert lines[-1] == f"episodes.jsonl: {len(log)} episodes, 512 of them validation"


def test_patched_verl_agent__a_fair_make_envs_plays_on_this_ray(ray, tmp_path):
    """The patched verl-agent's make_envs on real actors of this module's Ray (verl-agent runs
    make_envs inside its Ray job): a small launcher, 2 boards x 2 copies and 16 validation workers.
    The actor is killed, and restarted empty by Ray, between two steps of one validation chunk and
    of the training rollout, as while the model generates: the rollouts and records must still be
    exactly the scripted model's (what a run without the fault gives)."""
    from test_verl_agent_patched_trainer import check_passes, patched_copy, run

    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("hydra") is None:
        unavailable("torch or hydra-core is not installed; pip install -e '.[test]'")
    tree = patched_copy(tmp_path / "verl-agent")
    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address}
    rng = random.Random()
    kill = {"chunk": rng.randrange(16), "turn": rng.randrange(1, 4), "training_turn": rng.randrange(1, 4)}
    report = run(sys.executable, tree, tmp_path / "work", env=env, val_batch_sizes=[16], backend="ray", updates=[0],
                 kill=kill, extra_overrides=["data.train_batch_size=2", "env.rollout.n=2", "env.resources_per_worker.num_cpus=0.05"])
    assert report["workers"] == "RayWorkers" and report["kills"] == 2, kill
    check_passes(report, {16: [16] * 16}, [sys.executable, "-m", "sokoban_tools", "score"], training_groups=(2, 2))
