"""Time the drop-in runtime against gym-sokoban driven the way verl-agent drives it.

Part of ``python -m sokoban_tools benchmark``. :func:`manager_figures` drives the runtime
through verl-agent's real ``SokobanEnvironmentManager`` (imported from a temporary copy of
``../shared/verl-agent``; it needs ``torch==2.13.0`` and ``omegaconf``) at the published
launcher's scale, beside the same manager on in-process environments and on verl-agent's
own ``build_sokoban_envs``, all in one run. verl-agent's Sokoban worker wraps
gym-sokoban's ``SokobanEnv``: each step runs gym-sokoban's ``step`` (which draws
the observation, re-reading its tile PNGs) and then renders again for the
returned observation. :class:`GymSokobanWorker` does exactly that on the same
stored boards (loaded into gym-sokoban's state, not regenerated) and the same
actions as our :class:`FairSokobanEnv`, in-process and as Ray actors.
gym-sokoban (and Ray) come with the test extra: ``pip install -e '.[test]'``.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from ...layout import ROOT, TRAIN_DATA
from ...rules.board import ACTIONS, Board
from ...protocol import DEFAULT_MAX_STEPS
from ...runtime.env import FairSokobanEnv
from .original import gym_sokoban

ACTORS = 8
EPISODES = 12
IMPORT_RUNS = 5
WORKER_MODULE = "sokoban_tools.runtime.env"
GYM_WORKER_MODULE = "gym_sokoban.envs.sokoban_env"
VERL_AGENT = ROOT.parent / "shared" / "verl-agent"
TRAINING_ENVS = (32, 8)  # run_sokoban.sh: train_data_size 32, group_size 8
VALIDATION_ENVS = 128  # run_sokoban.sh: val_data_size 128
RESOURCES = {"num_cpus": 0.1, "num_gpus": 0}  # ppo_trainer.yaml's env.resources_per_worker
ORIGINAL_ENVS = 32  # the most of verl-agent's own actors this machine runs in reasonable time
MANAGER_EPISODES = 2
ANSWERS = ("<think>push</think><action>up</action>", "<think>walk</think><action>down</action>",
           "<think>walk</think><action>left</action>", "<think>push</think><action>right</action>",
           "I would go left")  # the last one unparseable: verl-agent sends action 0


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
    from ...records.tasks import load_training
    from ...integrations.verl_agent.envs import build_sokoban_envs

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


@contextlib.contextmanager
def verl_agent_client():
    """verl-agent's ``SokobanEnvironmentManager``, its ``sokoban_projection`` and its own
    ``build_sokoban_envs``, imported from a temporary copy of its files (never from the shared
    tree, never into this project), its config with ``run_sokoban.sh``'s Sokoban settings, and
    the copy's folder (for the ``PYTHONPATH`` of verl-agent's own Ray actors)."""
    from omegaconf import OmegaConf

    if not (VERL_AGENT / "agent_system").is_dir():
        raise RuntimeError(f"verl-agent's files are not at {VERL_AGENT}")
    with tempfile.TemporaryDirectory() as folder:
        shutil.copytree(VERL_AGENT / "agent_system", Path(folder) / "agent_system")
        sys.path.insert(0, folder)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # gym's deprecation warnings, as verl-agent lets them pass
                from agent_system.environments.env_manager import SokobanEnvironmentManager
                from agent_system.environments.env_package.sokoban import build_sokoban_envs, sokoban_projection
            config = OmegaConf.load(VERL_AGENT / "verl/trainer/config/ppo_trainer.yaml")
            OmegaConf.update(config, "env.env_name", "Sokoban")
            OmegaConf.update(config, "env.max_steps", DEFAULT_MAX_STEPS)
            OmegaConf.update(config, "env.sokoban.mode", "rgb_array")
            yield SokobanEnvironmentManager, sokoban_projection, build_sokoban_envs, config, folder
        finally:
            sys.path.remove(folder)
            for name in [name for name in sys.modules if name.split(".")[0] == "agent_system"]:
                del sys.modules[name]


def _manager_step_ms(manager, count: int) -> float:
    """Median ms of ``manager.step`` over ``MANAGER_EPISODES`` episodes of 15 scripted answers."""
    rng = random.Random(0)
    times = []
    for _ in range(MANAGER_EPISODES):
        manager.reset({})
        for _ in range(DEFAULT_MAX_STEPS):
            answers = [rng.choice(ANSWERS) for _ in range(count)]
            started = time.perf_counter()
            manager.step(answers)
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def _ray_worker_rss_bytes() -> int:
    """Resident memory of all Ray worker processes this process started (``ray::...``), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    total, stack = 0, list(children.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        stack += children.get(pid, [])
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if command.startswith(b"ray::"):
            total += int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) * 1024
    return total


def _original_manager_step_ms(manager_class, projection, original_build, config, env_kwargs) -> float:
    """:func:`_manager_step_ms` of verl-agent's own environments, closed (and dropped, since their
    ``__del__`` closes again) while Ray still runs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gym's warnings, which verl-agent ignores too
        original = original_build(0, ORIGINAL_ENVS, 1, "rgb_array", RESOURCES, True, env_kwargs)
        try:
            return _manager_step_ms(manager_class(original, projection, config), ORIGINAL_ENVS)
        finally:
            original.close()


def manager_figures() -> list[tuple[str, str, str, str]]:
    """(what, this code, original in the same run, goal) rows for the runtime through verl-agent's
    ``SokobanEnvironmentManager``, ``rgb_array``: start-up and memory of the launcher's 384
    environments, ``manager.step`` at 256 against in-process environments, and at 32 against
    verl-agent's own environments."""
    import ray

    from ...integrations.verl_agent.envs import build_sokoban_envs

    env_kwargs = {"dim_room": [6, 6], "num_boxes": 1, "max_steps": DEFAULT_MAX_STEPS, "search_depth": 30}
    boards, group = TRAINING_ENVS
    training_envs = boards * group
    # the logical CPUs verl-agent's launcher asks for: one num_cpus 0.1 per training environment
    cpus = round(training_envs * RESOURCES["num_cpus"] + 0.5)
    with verl_agent_client() as (manager_class, projection, original_build, config, folder):
        # no idle workers prestarted for the logical CPUs: this machine has two real ones
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": folder}},
                 _system_config={"prestart_worker_first_driver": False})
        try:
            started = time.perf_counter()
            training = build_sokoban_envs(0, boards, group, "rgb_array", RESOURCES, True, env_kwargs)
            validation = build_sokoban_envs(1000, VALIDATION_ENVS, 1, "rgb_array", RESOURCES, False, env_kwargs)
            validation.reset()
            training.reset()
            startup = time.perf_counter() - started
            rss = _ray_worker_rss_bytes()
            actors = len(training.workers.actors)
            ours_256 = _manager_step_ms(manager_class(training, projection, config), training_envs)
            training.close()
            local = build_sokoban_envs(0, boards, group, "rgb_array", RESOURCES, True, env_kwargs, backend="local")
            local_256 = _manager_step_ms(manager_class(local, projection, config), training_envs)
            small = build_sokoban_envs(0, ORIGINAL_ENVS, 1, "rgb_array", RESOURCES, True, env_kwargs)
            ours_32 = _manager_step_ms(manager_class(small, projection, config), ORIGINAL_ENVS)
            small.close()
            original_32 = _original_manager_step_ms(manager_class, projection, original_build, config, env_kwargs)
        finally:
            ray.shutdown()
    return [
        (f"runtime through verl-agent's `SokobanEnvironmentManager`: {training_envs + VALIDATION_ENVS} "
         f"environments ({boards}×{group} training, {VALIDATION_ENVS} validation) started and reset "
         f"(on {actors} Ray actors shared by both phases; Ray with {cpus} logical CPUs)",
         f"{startup:.1f} s", "", "≤ 10 s"),
        ("resident memory of all Ray worker processes, those environments live",
         f"{rss / 2**30:.2f} GB", "", "≤ 2.5 GB"),
        (f"`manager.step` median, {training_envs} training environments on Ray, `rgb_array` (in brackets: "
         f"the same manager with the environments stepped in this process)",
         f"{ours_256:.1f} ms ({local_256:.1f} ms, {ours_256 / local_256:.1f}×)", "",
         "≤ 30 ms, ≤ 2.5× in-process"),
        (f"`manager.step` median, {ORIGINAL_ENVS} environments on Ray, `rgb_array` (original: verl-agent's "
         f"`build_sokoban_envs`, one gym-sokoban actor each)",
         f"{ours_32:.1f} ms", f"{original_32:.1f} ms ({original_32 / ours_32:.0f}× slower)", "≥ 10× faster"),
    ]
