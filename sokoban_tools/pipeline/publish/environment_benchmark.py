"""Gymnasium environment figures for ``python -m sokoban_tools benchmark``: env steps per CPU-second
of ``SokobanFairnessVector-v1`` (every environment stepped at once as arrays) and of
``SokobanFairness-v1``'s own vector (Gymnasium's ``SyncVectorEnv`` of single environments), in
the same run on the same random actions, and what an episode log's sync costs.

An env step is one environment playing one action: the step that only starts an environment's
next board (Gymnasium's next-step autoreset) is not one. Each figure is the best of
:data:`REPEATS` runs (other work on a shared machine only adds time), in CPU time, with the
wall time of the same run beside it.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

ENVS = 256
VECTOR_STEPS = 1_000  # vector steps of the arrays: 256,000 env steps
SHARD_STEPS = 60  # vector steps of the single environments: 15,360 env steps
REPEATS = 3
SYNC_RECORDS = 300


def _env_steps_rate(envs, steps: int, seed: int = 0) -> tuple[float, float]:
    """(env steps per CPU-second, per wall-second) of ``steps`` random steps of ``envs``."""
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, 5, (steps, envs.num_envs))
    envs.reset(seed=seed)
    starting = np.zeros(envs.num_envs, bool)
    played = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for row in actions:
        _, _, terminated, truncated, _ = envs.step(row)
        played += envs.num_envs - int(np.count_nonzero(starting))
        starting = terminated | truncated
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return played / cpu, played / wall


def _best(make, steps: int) -> tuple[float, float]:
    runs = []
    for _ in range(REPEATS):
        envs = make()
        runs.append(_env_steps_rate(envs, steps))
        envs.close()
    return max(cpu for cpu, _ in runs), max(wall for _, wall in runs)


def _rate(cpu: float, wall: float) -> str:
    def shown(value: float) -> str:
        return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:,.0f}k"

    return f"{shown(cpu)} per CPU-second ({shown(wall)} per wall-second)"


def _sync_figures(folder: Path) -> tuple[float, float, float, float]:
    """(CPU, wall) ms a record of appending :data:`SYNC_RECORDS` records one at a time, as
    written now (synced at the end) and synced after every record (the policy before issue 47)."""
    from ...records.episodes import EpisodeRecord, episode_writer

    record = EpisodeRecord("m", "0", "training", 0, "train-00000", False, 15, -1.5, None, "U" * 15)
    figures = []
    for every in (False, True):
        log = folder / f"sync-{every}.jsonl"
        cpu, wall = time.process_time(), time.perf_counter()
        with episode_writer(log) as writer:
            for _ in range(SYNC_RECORDS):
                writer.append([record])
                if every:
                    writer.sync()
        figures += [(time.process_time() - cpu) / SYNC_RECORDS * 1e3, (time.perf_counter() - wall) / SYNC_RECORDS * 1e3]
    return tuple(figures)


def environment_figures() -> list[tuple[str, str, str, str]]:
    """(what, figure, original, goal) rows."""
    import gymnasium

    import sokoban_tools.integrations.gymnasium_env as registered

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for observation, log in (("grid", False), ("grid", True), ("rgb", False)):
            def settings(name):
                return {"observation": observation,
                        **({"episode_log": Path(folder) / f"{name}.jsonl", "update": 0} if log else {})}

            arrays = _best(lambda: gymnasium.make_vec(registered.VECTOR_ENV_ID, num_envs=ENVS,
                                                      **settings("arrays")), VECTOR_STEPS)
            shards = _best(lambda: gymnasium.make_vec(registered.ENV_ID, num_envs=ENVS, **settings("shards")),
                           SHARD_STEPS)
            for name in ("arrays", "shards"):
                for path in Path(folder).glob(f"{name}.jsonl*"):
                    path.unlink()
            what = (f"Gymnasium env steps, {observation} observations, {ENVS} environments, random actions, one "
                    f"thread{', every episode logged' if log else ''}: `SokobanFairnessVector-v1`'s arrays "
                    f"({VECTOR_STEPS * ENVS:,} env steps) against `SokobanFairness-v1`'s `make_vec` "
                    f"(`SyncVectorEnv` of single environments, {SHARD_STEPS * ENVS:,}), same run; best of {REPEATS}")
            rows.append((what, f"arrays {_rate(*arrays)}; single environments {_rate(*shards)}: "
                               f"{arrays[0] / shards[0]:.0f}× per CPU-second",
                         "", "≥ 1M per CPU-second (grid, no log)" if observation == "grid" and not log else ""))
        now_cpu, now_wall, every_cpu, every_wall = _sync_figures(Path(folder))
    rows.append((f"episode log, per record appended one at a time ({SYNC_RECORDS} records): synced at the run's "
                 f"durable points (now) against synced after every record (before issue 47)",
                 f"{now_cpu:.3f} ms CPU, {now_wall:.3f} ms wall; every record synced: {every_cpu:.3f} ms CPU, "
                 f"{every_wall:.3f} ms wall", "", ""))
    return rows
