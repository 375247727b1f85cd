"""Time the drop-in runtime against gym-sokoban driven the way verl-agent drives it.

Part of ``python -m sokoban_tools benchmark``. verl-agent's Sokoban worker wraps
gym-sokoban's ``SokobanEnv``: each step runs gym-sokoban's ``step`` (which draws
the observation, re-reading its tile PNGs) and then renders again for the
returned observation. :class:`GymSokobanWorker` does exactly that on the same
stored boards (loaded into gym-sokoban's state, not regenerated) and the same
actions as our :class:`FairSokobanEnv`, in-process and as Ray actors.
gym-sokoban (and Ray) come with the test extra: ``pip install -e '.[test]'``.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

from ...layout import ROOT, TRAIN_DATA
from ...rules.board import ACTIONS, Board
from ...runtime.env import DEFAULT_MAX_STEPS, FairSokobanEnv
from .original import gym_sokoban

ACTORS = 8
EPISODES = 12
IMPORT_RUNS = 5
WORKER_MODULE = "sokoban_tools.runtime.env"
GYM_WORKER_MODULE = "gym_sokoban.envs.sokoban_env"


def gym_sokoban_env(max_steps: int = DEFAULT_MAX_STEPS):
    """gym-sokoban 0.0.6's ``SokobanEnv`` configured as verl-agent configures it, without a generated room."""
    sokoban_env = gym_sokoban(GYM_WORKER_MODULE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gym's warnings about env API changes, which verl-agent ignores too
        return sokoban_env.SokobanEnv(dim_room=(6, 6), max_steps=max_steps, num_boxes=1, reset=False)


def load_into_gym(gym_env, board: Board) -> None:
    """Put a stored board into gym-sokoban's env the way its reset() leaves a generated
    one: these are all the attributes its step() reads."""
    gym_env.room_fixed = np.array(board.room_fixed, dtype=np.uint8)
    gym_env.room_state = np.array(board.room_state(), dtype=np.uint8)
    gym_env.box_mapping = {}
    gym_env.player_position = np.argwhere(gym_env.room_state == 5)[0]
    gym_env.num_env_steps = 0
    gym_env.reward_last = 0
    gym_env.boxes_on_target = 0


class GymSokobanWorker:
    """verl-agent's worker around gym-sokoban: ``step`` then a second ``render`` per action."""

    def __init__(self, max_steps: int = DEFAULT_MAX_STEPS):
        self.env = gym_sokoban_env(max_steps)

    def reset(self, board: Board):
        load_into_gym(self.env, board)
        return self.env.render("rgb_array"), {"won": False}

    def step(self, action: int):
        before = self.env.player_position
        _, reward, done, _ = self.env.step(action, observation_mode="rgb_array")
        observation = self.env.render("rgb_array")
        info = {"action_is_effective": not np.array_equal(before, self.env.player_position),
                "won": self.env.boxes_on_target == self.env.num_boxes}
        return observation, reward, done, info


def _median_import_seconds(module: str) -> tuple[float, float]:
    """Median wall times of importing ``module`` in a fresh interpreter (start-up excluded):
    in all, and the part after numpy, which every worker that returns images pays anyway."""
    program = ("import time; t0 = time.perf_counter(); import numpy; t1 = time.perf_counter(); "
               f"import {module}; t2 = time.perf_counter(); print(t2 - t0, t2 - t1)")
    runs = []
    for _ in range(IMPORT_RUNS):
        done = subprocess.run([sys.executable, "-W", "ignore", "-c", program], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"importing {module} failed: {done.stderr.strip().splitlines()[-1]}")
        runs.append([float(value) for value in done.stdout.split()[-2:]])
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def _episodes(boards: list[Board]) -> list[tuple[Board, list[int]]]:
    """One 15-action episode of random actions 1-4 per board (gym-sokoban has no action 0)."""
    rng = random.Random(0)
    return [(board, [rng.choice(ACTIONS) for _ in range(DEFAULT_MAX_STEPS)]) for board in boards]


def _in_process_step_seconds(worker, episodes) -> float:
    """Mean seconds per step of one worker object, resets excluded."""
    spent, steps = 0.0, 0
    for board, actions in episodes:
        worker.reset(board)
        started = time.perf_counter()
        for action in actions:
            worker.step(action)
        spent += time.perf_counter() - started
        steps += len(actions)
    return spent / steps


def _drop_in_figures(episodes: int) -> tuple[float, float, float, list[list[Board]], list[list[int]]]:
    """(actor start-up incl. first reset, median reset latency, steps/s) of the drop-in with
    ``ACTORS`` training workers driven as the trainer drives them, and the boards and actions
    it played, so that gym-sokoban can play the same."""
    from ...runtime.tasks import load_training
    from ...runtime.verl_agent import build_sokoban_envs

    by_id = {row.task_id: row.board for row in load_training(ROOT / TRAIN_DATA)}
    rng = random.Random(0)
    plan = [[[rng.choice(ACTIONS) for _ in range(ACTORS)] for _ in range(DEFAULT_MAX_STEPS)]
            for _ in range(episodes)]
    started = time.perf_counter()
    envs = build_sokoban_envs(0, ACTORS, 1, "rgb_array", is_train=True)
    envs.reset()
    startup = time.perf_counter() - started
    resets, stepping, boards = [], 0.0, []
    for turns in plan:
        started = time.perf_counter()
        envs.reset()
        resets.append(time.perf_counter() - started)
        boards.append([by_id[task_id] for task_id in envs.task_ids])
        started = time.perf_counter()
        for actions in turns:
            envs.step(actions)
        stepping += time.perf_counter() - started
    envs.close()
    return startup, statistics.median(resets), episodes * DEFAULT_MAX_STEPS * ACTORS / stepping, boards, plan


def _gym_figures(ray, boards: list[list[Board]], plan: list[list[list[int]]]) -> tuple[float, float, float]:
    """The same figures for ``ACTORS`` Ray actors of :class:`GymSokobanWorker` on the same
    boards and actions."""
    started = time.perf_counter()
    actor_class = ray.remote(num_cpus=0.1)(GymSokobanWorker)
    actors = [actor_class.remote(DEFAULT_MAX_STEPS) for _ in range(ACTORS)]
    ray.get([actor.reset.remote(board) for actor, board in zip(actors, boards[0])])
    startup = time.perf_counter() - started
    resets, stepping = [], 0.0
    for group, turns in zip(boards, plan):
        started = time.perf_counter()
        ray.get([actor.reset.remote(board) for actor, board in zip(actors, group)])
        resets.append(time.perf_counter() - started)
        started = time.perf_counter()
        for actions in turns:
            ray.get([actor.step.remote(action) for actor, action in zip(actors, actions)])
        stepping += time.perf_counter() - started
    for actor in actors:
        ray.kill(actor)
    return startup, statistics.median(resets), len(plan) * DEFAULT_MAX_STEPS * ACTORS / stepping


def runtime_figures(boards: list[Board]) -> list[tuple[str, str, str, str]]:
    """(what, this code, gym-sokoban as verl-agent drives it, goal) rows for the benchmark
    table: the worker's import, per-step cost (on ``boards``) and Ray throughput."""
    import ray

    ours_import = _median_import_seconds(WORKER_MODULE)
    gym_import = _median_import_seconds(GYM_WORKER_MODULE)
    episodes = _episodes(boards)
    ours_step = _in_process_step_seconds(FairSokobanEnv("rgb_array"), episodes)
    gym_step = _in_process_step_seconds(GymSokobanWorker(), episodes)
    ray.init(num_cpus=ACTORS, include_dashboard=False, log_to_driver=False)
    try:
        *ours_ray, played, plan = _drop_in_figures(EPISODES)
        gym_ray = _gym_figures(ray, played, plan)
    finally:
        ray.shutdown()
    return [
        (f"runtime worker import (`import {WORKER_MODULE}`; in brackets, after numpy)",
         f"{ours_import[0]:.2f} s ({ours_import[1]:.3f} s)", f"{gym_import[0]:.2f} s ({gym_import[1]:.3f} s)",
         "≤ 0.3 s"),
        ("runtime step inside a worker, `rgb_array`",
         f"{ours_step * 1e6:,.0f} µs", f"{gym_step * 1e6:,.0f} µs ({gym_step / ours_step:.0f}× slower)",
         "≥ 20× faster"),
        (f"runtime (`build_sokoban_envs`) on {ACTORS} Ray actors, steps/s",
         f"{ours_ray[2]:,.0f}", f"{gym_ray[2]:,.0f}", ""),
        (f"runtime reset of {ACTORS} Ray actors, median latency",
         f"{ours_ray[1] * 1e3:.1f} ms", f"{gym_ray[1] * 1e3:.1f} ms", ""),
        (f"runtime start-up of {ACTORS} Ray actors and their first reset",
         f"{ours_ray[0]:.1f} s", f"{gym_ray[0]:.1f} s", ""),
    ]
