"""Training figures for ``python -m sokoban_tools benchmark``: what the committed runs cost, how
much of a run is the environment, and what the batched learner costs beside the current one.

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
SHARE_STEPS = 20_480  # ten of PPO's rollouts; one pass before and one after
BATCHED_STEPS = 102_400  # 25 of the batched learner's rollouts; one pass before and one after


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


@contextlib.contextmanager
def _timed_environment(spent: list[float]):
    """Adds the CPU time of every ``reset`` and ``step`` of ``SokobanFairness-v1`` to ``spent[0]``."""
    from ...integrations.gymnasium_env.env import SokobanFairnessEnv

    originals = {name: getattr(SokobanFairnessEnv, name) for name in ("reset", "step")}

    def timed(method):
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            started = time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                spent[0] += time.process_time() - started
        return wrapper

    for name, method in originals.items():
        setattr(SokobanFairnessEnv, name, timed(method))
    try:
        yield
    finally:
        for name, method in originals.items():
            setattr(SokobanFairnessEnv, name, method)


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


def _timed_run(run) -> tuple[float, float, int]:
    """(CPU-seconds, wall seconds, env steps trained) of ``run(folder)``, which returns its passes."""
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        cpu, wall = time.process_time(), time.perf_counter()
        passes = run(Path(folder) / "run.jsonl")
        return time.process_time() - cpu, time.perf_counter() - wall, passes[-1]["env_steps"]


def batched_figures() -> list[tuple[str, str, str, str]]:
    """The batched PPO learner against the current trainer's PPO, in this run: CPU-seconds per
    million env steps, each from a short run (a validation pass before and one after included)."""
    from ...training.batched_ppo import train_batched
    from ...training.train import train

    batched = _timed_run(lambda log: train_batched(0, log, BATCHED_STEPS, BATCHED_STEPS))
    current = _timed_run(lambda log: train("ppo", 0, log, SHARE_STEPS, SHARE_STEPS, quiet=True))

    def per_million(cpu: float, wall: float, steps: int) -> str:
        return f"{cpu / steps * 1e6:,.0f} CPU-s ({wall / steps * 1e6:,.0f} s wall; {steps:,} env steps run)"

    return [("training CPU-seconds per 1M env steps on one thread, from a short run of each in this run (a "
             "validation pass before and one after included): the batched PPO (`sokoban_tools/training/"
             "batched_ppo.py`, 256 environments as arrays, not yet `train`'s learner) against `train --method ppo`",
             f"batched {per_million(*batched)}; `train --method ppo` {per_million(*current)}: "
             f"{(current[0] / current[2]) / (batched[0] / batched[2]):.0f}× per env step",
             "", "≤ 120 CPU-s, ≥ 5× (issue 47)")]


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
        rows.append(("training env steps per CPU-second, median over seeds (the committed runs' env steps over "
                     "their CPU-seconds, validation passes included)",
                     _by_method(runs, lambda r: r["env_steps"] / r["cpu_seconds"], lambda v, _: f"{v:,.0f}"),
                     "", ""))
    shares = {method: environment_share(method) for method in METHODS}
    rows.append((f"the environment's share of a training run's CPU time: `SokobanFairness-v1`'s reset and step, "
                 f"logging included (`train --steps {SHARE_STEPS:,}`, seed 0, a pass before and after)",
                 ", ".join(f"{METHODS[m]} {share:.1%}" for m, share in shares.items()), "", ""))
    return rows + batched_figures()
