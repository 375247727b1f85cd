"""The worker's environment replays every trace of the original verl-agent environment exactly.

Every one of the 1,200 recorded episodes (both observation modes, the stored
solution and the random play with action 0 in it) is replayed through
:class:`FairSokobanEnv` in this process; ``test_verl_agent_envs_ray.py`` replays them
all again inside a Ray actor of the drop-in runtime.
"""

from __future__ import annotations

from collections import Counter

import pytest

from sokoban_tools.runtime.env import FairSokobanEnv
from traces import boards_of, calls_of, load_traces, mismatches


@pytest.fixture(scope="module")
def traces():
    return load_traces()


def run_in_process(env: FairSokobanEnv, calls: list[tuple]) -> list:
    return [env.num_env_steps if method == "num_env_steps" else getattr(env, method)(*args)
            for method, *args in calls]


def test_traces__cover_both_modes_both_episode_kinds_and_the_behaviours_that_matter(traces):
    assert len(traces) == 1200
    assert Counter((t["mode"], t["episode"]) for t in traces) == {
        (mode, kind): 300 for mode in ("rgb_array", "tiny_rgb_array") for kind in ("solution", "random")}
    steps = [s for t in traces for s in t["steps"]]
    assert sum(s["action"] == 0 for s in steps) > 1000
    assert any(s["done"] and not s["info"]["won"] for s in steps)  # the horizon
    assert any(s["reward"] == 10.9 for s in steps)


def test_traces__every_episode_replays_step_for_step_in_the_workers_environment(traces):
    envs = {mode: FairSokobanEnv(mode, max_steps=15) for mode in ("rgb_array", "tiny_rgb_array")}
    found, compared = [], 0
    for trace, board in zip(traces, boards_of(traces)):
        found += mismatches(trace, run_in_process(envs[trace["mode"]], calls_of(trace, board)))
        compared += len(trace["steps"])
    assert not found, "\n".join(found[:20])
    assert compared > 10_000
