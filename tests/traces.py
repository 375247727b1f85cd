"""Replaying the runtime traces of the original environment (helper for tests, not a test file).

``tests/data/runtime-traces.jsonl.gz`` (see its README there) records 1,200
episodes of verl-agent's Sokoban environment: for every step the reward, done,
info, observation and the ``state``/``list``/``tiny_rgb_array`` renders. An
episode is replayed as a flat list of worker calls (:func:`calls_of`), so that
the same check runs on an in-process environment and, pipelined, on a Ray actor;
:func:`mismatches` compares what the calls returned with the record.
"""

from __future__ import annotations

import gzip
import hashlib
import json

import numpy as np

from conftest import DATA_DIR, TEST_DATA
from sokoban_tools.records.rows import read_rows

TRACES = TEST_DATA / "runtime-traces.jsonl.gz"
RENDERS = ("state", "list", "tiny_rgb_array")
STEPS = ("num_env_steps",)  # a call that reads the worker's step counter


def load_traces() -> list[dict]:
    """Every trace episode."""
    with gzip.open(TRACES, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def boards_of(traces: list[dict]) -> list:
    """The stored board of each trace: train rows by task ID, pool rows by seed (unique,
    and stable while pool task IDs are renamed)."""
    train = {row.task_id: row.board for row in read_rows(DATA_DIR / "train.jsonl")}
    pool = {row.seed: row.board for row in read_rows(DATA_DIR / "evaluation-pool-1000.jsonl")}
    return [train[t["task_id"]] if t["source"] == "train" else pool[t["seed"]] for t in traces]


def calls_of(trace: dict, board) -> list[tuple]:
    """The worker calls that replay ``trace`` from ``board``: reset, then each step, each
    followed by the three renders and a read of the step counter."""
    after = [("render", mode) for mode in RENDERS] + [STEPS]
    calls = [("reset", board), *after]
    for action in trace["actions"]:
        calls += [("step", action), *after]
    return calls


def encoded(observation):
    """An observation as the traces store it: text as is, an image by shape, dtype and digest."""
    if isinstance(observation, str):
        return observation
    array = np.ascontiguousarray(observation)
    return {"shape": list(array.shape), "dtype": str(array.dtype), "sha256": hashlib.sha256(array.tobytes()).hexdigest()}


def mismatches(trace: dict, results: list) -> list[str]:
    """Where the results of :func:`calls_of`'s calls differ from the recorded episode."""
    width = 1 + len(RENDERS) + 1
    groups = [results[i:i + width] for i in range(0, len(results), width)]
    found = []
    for number, (first, *renders, steps) in enumerate(groups):
        expected = trace["reset"] if number == 0 else trace["steps"][number - 1]
        got = {mode: render for mode, render in zip(RENDERS, renders)}
        got["state"] = np.asarray(got["state"]).tolist()
        got["num_env_steps"] = steps
        if number == 0:
            got["obs"], got["info"] = encoded(first[0]), first[1]
        else:
            obs, reward, done, info = first
            got.update(action=expected["action"], obs=encoded(obs), reward=reward, done=done, info=info)
            if type(reward) is not float or type(done) is not bool:
                found.append(f"step {number}: reward {type(reward).__name__}, done {type(done).__name__}")
        for key, value in expected.items():
            if got[key] != value:
                found.append(f"{trace['task_id']} {trace['mode']} {trace['episode']} step {number}: "
                             f"{key} {got[key]!r} != {value!r}")
    return found
