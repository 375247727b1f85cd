"""Training figures for ``python -m sokoban_tools benchmark``: what the committed runs cost, how
much of a run is the environment, and what ``train``'s batched PPO costs beside stable-baselines3's own.

The costs to a success rate come from the committed runs (``examples/training``, ten seeds a
method): a run's manifest records its total CPU-seconds and env steps only, so the CPU-seconds
to a pass are its env steps at that pass times the run's CPU-seconds per env step (validation
passes included). The environment's share is measured in this run: a short ``train`` of each method,
its CPU time in ``SokobanFairness-v1``'s ``reset`` and ``step`` (drawing, stepping and logging
the episodes) over the whole.
"""

from __future__ import annotations

import contextlib
import functools
import io
import tempfile
import time
from pathlib import Path
from statistics import median

from ...training.train import METHODS
from .training_report import cpu_at, run_logs, scored_runs

THRESHOLDS = (0.85, 0.95)  # the success rates each method is timed to
SHARE_STEPS = 20_480  # five of PPO's rollouts, ten of stable-baselines3's own PPO's
BATCHED_STEPS = 204_800  # fifty of PPO's rollouts


def cpu_seconds_to(run: dict, threshold: float) -> float:
    """CPU-seconds to the run's first pass at or above ``threshold`` (infinite if none is)."""
    for point, (wins, boards) in zip(run["points"], run["success"]):
        if wins / boards >= threshold:
            return cpu_at(run, point)
    return float("inf")


def _by_method(runs: list[dict], figure, shown) -> str:
    cells = []
    for method in METHODS:
        values = [figure(r) for r in runs if r["method"] == method]
        if values:
            cells.append(f"{METHODS[method]} {shown(median(values), values)}")
    return ", ".join(cells)


def _reached(value: float, values: list[float]) -> str:
    reached = sum(v != float("inf") for v in values)
    seeds = f"{reached} of {len(values)} seeds reached it"
    return f"{value:,.0f} s ({seeds})" if value != float("inf") else f"not reached by the median seed ({seeds})"


def _spread(value: float, values: list[float]) -> str:
    return f"{value:,.0f} s ({min(values):,.0f}-{max(values):,.0f})"


@contextlib.contextmanager
def _timed_environment(spent: list[float]):
    """Adds the CPU time of every ``reset`` and ``step`` of ``SokobanFairness-v1`` and of its
    vector to ``spent[0]`` (the outermost call only, where one calls the other)."""
    from ...integrations.gymnasium_env.env import SokobanFairnessEnv
    from ...integrations.gymnasium_env.vector import SokobanFairnessVectorEnv

    originals = {(cls, name): getattr(cls, name) for cls in (SokobanFairnessEnv, SokobanFairnessVectorEnv)
                 for name in ("reset", "step")}
    depth = [0]

    def timed(method):
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            depth[0] += 1
            started = time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                depth[0] -= 1
                if not depth[0]:
                    spent[0] += time.process_time() - started
        return wrapper

    for (cls, name), method in originals.items():
        setattr(cls, name, timed(method))
    try:
        yield
    finally:
        for (cls, name), method in originals.items():
            setattr(cls, name, method)


def environment_share(method: str, steps: int = SHARE_STEPS) -> float:
    """The environment's share of the CPU time of ``train --method method --steps steps``."""
    from ...training.train import train

    spent = [0.0]
    with (tempfile.TemporaryDirectory() as folder, _timed_environment(spent),
          contextlib.redirect_stdout(io.StringIO())):  # the passes' lines: the benchmark prints its own
        started = time.process_time()
        train(method, 0, Path(folder) / "run.jsonl", steps, steps, quiet=True)
        total = time.process_time() - started
    return spent[0] / total


def _learning(learner, steps: int) -> tuple[float, float, int]:
    """(CPU-seconds, wall seconds, env steps) of ``learner.train_until(steps)``: training alone."""
    cpu, wall = time.process_time(), time.perf_counter()
    learner.train_until(steps, lambda done: None)
    return time.process_time() - cpu, time.perf_counter() - wall, learner.env_steps


class _StableBaselines3PPO:
    """stable-baselines3's own PPO with its defaults on the 8 shards and the network every method
    trains (``train --method ppo``'s learner before issue 47), as a learner to time."""

    def __init__(self, log: Path):
        from stable_baselines3 import PPO

        from ...integrations.gymnasium_env.sb3 import make_sb3_vec
        from ...training.recipe import NETWORK

        self.envs = make_sb3_vec(8, 0, split="train", observation="grid", episode_log=log, method="PPO", update=0)
        self.model = PPO("MlpPolicy", self.envs, n_steps=256, policy_kwargs={"net_arch": NETWORK}, seed=0,
                         device="cpu", verbose=0)

    @property
    def env_steps(self) -> int:
        return self.model.num_timesteps

    def train_until(self, target: int, report) -> None:
        self.model.learn(total_timesteps=target)


def learner_figures() -> list[tuple[str, str, str, str]]:
    """``train --method ppo``'s batched learner against stable-baselines3's own PPO, in this run:
    CPU-seconds (and wall seconds) per million env steps of training, on one torch thread, each
    from a short run with its episodes logged and no validation pass."""
    import torch

    from ...training import ppo

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        batched = ppo.build({"observation": "grid", "episode_log": Path(folder) / "batched.jsonl", "method": "PPO",
                             "update": 0}, 0)
        reference = _StableBaselines3PPO(Path(folder) / "reference.jsonl")
        try:
            figures = _learning(batched, BATCHED_STEPS), _learning(reference, SHARE_STEPS)
        finally:
            batched.close()
            reference.envs.close()

    def per_million(cpu: float, wall: float, steps: int) -> str:
        return f"{cpu / steps * 1e6:,.0f} CPU-s ({wall / steps * 1e6:,.0f} s wall; {steps:,} env steps run)"

    (cpu, _, steps), (old_cpu, _, old_steps) = figures
    return [("training CPU-seconds per 1M env steps on one torch thread, learning alone (a short run of each in "
             "this run, episodes logged, no validation pass): `train --method ppo` (stable-baselines3's PPO "
             "batched over 256 environments) against stable-baselines3's own PPO with its defaults on 8 "
             "environments (`train`'s PPO before issue 47)",
             f"batched {per_million(*figures[0])}; stable-baselines3's {per_million(*figures[1])}: "
             f"{(old_cpu / old_steps) / (cpu / steps):.0f}× per env step",
             "", "≥ 5× (issue 47)")]


def training_figures(repo: Path) -> list[tuple[str, str, str, str]]:
    """(what, figure, original, goal) rows: the committed runs' costs, then the measured share."""
    logs = run_logs(repo)
    rows = []
    if logs:
        runs = scored_runs(repo, logs)
        budget = max(r["budget"] for r in runs)
        for threshold in THRESHOLDS:
            rows.append((f"training CPU-seconds to {threshold:.0%} validation success, median over seeds (the "
                         f"committed runs of {budget:,} env steps: env steps at the first pass at or above it × "
                         f"the run's CPU-seconds per env step, validation included)",
                         _by_method(runs, lambda r, t=threshold: cpu_seconds_to(r, t), _reached), "", ""))
        rows.append(("training CPU-seconds per 1M env steps on one torch thread, median (range) over seeds (the "
                     "committed runs' CPU-seconds over their env steps, validation passes included)",
                     _by_method(runs, lambda r: r["cpu_seconds"] / r["env_steps"] * 1e6, _spread),
                     "", "≤ 120 CPU-s (issue 47)"))
    shares = {method: environment_share(method) for method in METHODS}
    rows.append((f"the environment's share of a training run's CPU time: `SokobanFairness-v1`'s reset and step, "
                 f"logging included (`train --steps {SHARE_STEPS:,}`, seed 0, a pass before and after)",
                 ", ".join(f"{METHODS[m]} {share:.1%}" for m, share in shares.items()), "", ""))
    return rows + learner_figures()
