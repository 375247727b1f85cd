"""Time the generator, solver, renderer, whole pipeline, dataset loading and the verl-agent runtime.

    python -m sokoban_tools benchmark

Prints the figures and writes them to BENCHMARKS.md, then rewrites the card,
which quotes them. Timings vary by machine and load; they live here, in a
command, rather than in unit tests.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time

import numpy as np

from sokoban_fairness import SokobanFairness, cache_hash, render_rgb

from . import baselines, card, pools, runtime_benchmark, score, verify
from .artifacts import sha256_file, write_atomic
from .episodes import EpisodeRecord, append_episodes
from .generator import generate
from .records import read_rows
from .solver import shortest_solution

REPO = pools.DATA_DIR.parent
GENERATOR_SEEDS = 3000
SCORED_GROUPS = 100


def _timed(function, *args):
    started = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - started


def _load_seconds(with_images: bool, cache_dir: str) -> float:
    """Wall time of building (or reusing) the ``fairness`` config through the builder class."""
    builder = SokobanFairness(
        config_name="fairness", base_path=str(REPO), cache_dir=cache_dir, with_images=with_images,
        hash=cache_hash(),
    )
    started = time.perf_counter()
    builder.download_and_prepare()
    builder.as_dataset()
    return time.perf_counter() - started


def measure() -> list[tuple[str, str]]:
    """(what, figure) pairs, in the order the table shows them."""
    _, generator_s = _timed(lambda: [generate(seed) for seed in range(GENERATOR_SEEDS)])
    rows = read_rows(REPO / "fairness/train.jsonl") + read_rows(REPO / "fairness/evaluation-pool-1000.jsonl")
    _, solver_s = _timed(lambda: [shortest_solution(r.board) for r in rows])
    states = [(r.board.room_fixed, r.board.room_state()) for r in rows]
    _, render_s = _timed(lambda: [render_rgb(f, s) for f, s in states])
    _, pools_s = _timed(pools.build)
    _, verify_s = _timed(verify.build)
    figures = [
        ("generator (seeds 0–2,999, one process)", f"{GENERATOR_SEEDS / generator_s:,.0f} seeds/s"),
        ("exact solver, per board (6,000 pool boards)", f"{solver_s / len(rows) * 1e6:,.0f} µs"),
        ("renderer, per 6×6 board", f"{render_s / len(rows) * 1e6:,.0f} µs"),
        ("regenerate both pools and the audit (`python -m sokoban_tools.pools`)", f"{pools_s:.1f} s"),
        ("verify all 6,256 boards, every frame rendered (`python -m sokoban_tools.verify`)",
         f"{verify_s:.1f} s"),
    ]
    for with_images in (False, True):
        with tempfile.TemporaryDirectory() as cache:
            first = _load_seconds(with_images, cache)
            cached = _load_seconds(with_images, cache)
        label = "with images" if with_images else "without images"
        figures.append((f"load `fairness` {label}, first build", f"{first:.2f} s"))
        figures.append((f"load `fairness` {label}, cached", f"{cached:.2f} s"))
    figures += runtime_benchmark.runtime_figures([r.board for r in rows[:200]])
    return figures


def scoring_figures() -> list[tuple[str, str]]:
    """Time scoring a log of 100 complete validation passes, and the exact baselines."""
    evaluation = REPO / "fairness/evaluation.jsonl"
    task_ids = [row.task_id for row in read_rows(evaluation)]
    digest = sha256_file(evaluation)
    rng = np.random.Generator(np.random.PCG64(0))
    with tempfile.TemporaryDirectory() as folder:
        log = os.path.join(folder, "episodes.jsonl")
        append_episodes(log, (
            EpisodeRecord("method", f"run-{group // 10}", "validation", group % 10 * 5, task_id, bool(won),
                          15, 10.0 if won else -1.5, digest)
            for group in range(SCORED_GROUPS) for task_id, won in zip(task_ids, rng.random(len(task_ids)) < 0.4)
        ))
        _, score_s = _timed(score.score, [log])
    _, baselines_s = _timed(baselines.build)
    return [
        (f"score {SCORED_GROUPS} passes of {len(task_ids)} rows (`python -m sokoban_tools.score`)", f"{score_s:.2f} s"),
        ("exact baselines of all 6,256 boards (`python -m sokoban_tools.baselines`)", f"{baselines_s:.1f} s"),
    ]


def main() -> int:
    figures = measure() + scoring_figures()
    lines = [
        "# Benchmarks",
        "",
        f"Measured with `python -m sokoban_tools benchmark` on {os.cpu_count()} cores, "
        f"Python {platform.python_version()}.",
        "",
        "| What | Figure |",
        "|---|---|",
        *[f"| {what} | {figure} |" for what, figure in figures],
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    write_atomic(REPO / card.BENCHMARKS, text.encode("utf-8"))
    return card.main([])
