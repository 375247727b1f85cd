"""The benchmark command: it measures without editing the card, keeps its figures in BENCHMARKS.md when asked, its
yardstick is the original algorithm, and the other commands start without it."""

import json
import re
import subprocess
import sys

import pytest

from conftest import REPO, TEST_DATA
from sokoban_tools.pipeline.publish import benchmark, card, original
from sokoban_tools.rules.board import Board
from sokoban_tools.layout import BENCHMARKS
from sokoban_tools.rules.solver import shortest_solution


def test_benchmark__prints_the_figures_and_writes_nothing_unless_asked(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(benchmark, "measure", lambda: [("generator, per seed", "0.1 ms", "2.8 ms", "≤ 0.14 ms")])
    monkeypatch.setattr(benchmark, "ROOT", tmp_path)
    monkeypatch.setattr(card, "main", lambda argv: pytest.fail("the card was rewritten"))
    assert benchmark.main([]) == 0
    assert "| generator, per seed | 0.1 ms | 2.8 ms | ≤ 0.14 ms |" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []

    assert benchmark.main(["--write"]) == 0
    written = (tmp_path / BENCHMARKS).read_text(encoding="utf-8")
    assert written.startswith("# Benchmarks\n\n") and "| generator, per seed | 0.1 ms |" in written
    assert "load average" in written
    assert [path.name for path in tmp_path.iterdir()] == [BENCHMARKS]


def test_main__starts_without_the_benchmark_and_the_datasets_library():
    program = ("import sys, sokoban_tools.__main__; "
               "print(sorted(m for m in ('datasets', 'sokoban_tools.pipeline.publish.benchmark', "
               "'sokoban_tools.pipeline.publish.card', "
               "'sokoban_tools.pipeline.verification.verify') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_original__makes_the_reference_vectors_boards_and_solutions():
    # The yardstick must be the original algorithm: it reproduces the vectors
    # recorded from verl-agent, rejections included.
    vectors = [json.loads(line) for line in (TEST_DATA / "generator-seeds.jsonl").read_text().splitlines()]
    checked = [v for v in vectors if v["seed"] < 60 or v["status"] == "rejected"]
    for vector in checked:
        made = original.generate(vector["seed"])
        if vector["status"] == "rejected":
            assert made is None, vector["seed"]
            continue
        fixed, state = made
        assert Board.from_rooms(fixed, state) == Board.from_rooms(vector["room_fixed"], vector["room_state"])
        assert original.shortest_solution(fixed, state) == vector["shortest_actions"]
    assert len(checked) > 60


def test_original__solver_agrees_with_ours_and_returns_empty_when_unsolvable():
    board = Board.from_xsb("######\n#  . #\n# $  #\n#  @ #\n#    #\n######")
    assert original.shortest_solution(*original.rooms_of(board)) == shortest_solution(board)
    stuck = Board.from_xsb("#####\n#$@.#\n#####")
    assert original.shortest_solution(*original.rooms_of(stuck)) == []


def test_training_figures__cost_to_a_success_rate_is_pro_rata_of_env_steps_and_unreached_is_said():
    from sokoban_tools.pipeline.publish import training_benchmark as tb

    run = {"points": [0, 100, 200], "success": [(10, 256), (130, 256), (250, 256)], "cpu_seconds": 40.0,
           "env_steps": 200}
    assert tb.cpu_seconds_to(run, 0.5) == 20.0 and tb.cpu_seconds_to(run, 0.85) == 40.0
    assert tb.cpu_seconds_to(run, 0.99) == float("inf")
    assert tb._reached(20.0, [20.0, 30.0, float("inf")]) == "20 s (2 of 3 seeds reached it)"
    assert tb._reached(float("inf"), [20.0, float("inf"), float("inf")]) == (
        "not reached by the median seed (1 of 3 seeds reached it)")


def test_training_figures__the_environments_share_is_timed_in_its_methods_and_they_are_put_back(sb3):
    from sokoban_tools.integrations.gymnasium_env.env import SokobanFairnessEnv
    from sokoban_tools.pipeline.publish import training_benchmark as tb

    from sokoban_tools.integrations.gymnasium_env.vector import SokobanFairnessVectorEnv

    before = SokobanFairnessEnv.reset, SokobanFairnessEnv.step, SokobanFairnessVectorEnv.step
    for method in ("gigpo", "ppo"):  # PPO steps the vector, GiGPO the single environments
        share = tb.environment_share(method, 1024)
        assert 0 < share < 1, method
    assert (SokobanFairnessEnv.reset, SokobanFairnessEnv.step, SokobanFairnessVectorEnv.step) == before


def test_training_figures__trains_ppo_is_timed_beside_stable_baselines3s_own_in_one_run(sb3, monkeypatch):
    from sokoban_tools.pipeline.publish import training_benchmark as tb

    monkeypatch.setattr(tb, "BATCHED_STEPS", 4096)
    monkeypatch.setattr(tb, "SHARE_STEPS", 2048)
    [(what, figure, _, goal)] = tb.learner_figures()
    assert "against stable-baselines3's own PPO" in what and goal == "≥ 5× (issue 47)"
    assert re.fullmatch(r"batched [\d,]+ CPU-s \([\d,]+ s wall; 4,096 env steps run\); stable-baselines3's "
                        r"[\d,]+ CPU-s \([\d,]+ s wall; 2,048 env steps run\): \d+× per env step", figure), figure


def test_environment_figures__the_arrays_and_the_single_environments_are_timed_in_one_run(monkeypatch):
    from sokoban_tools.pipeline.publish import environment_benchmark as eb

    for name, value in (("ENVS", 4), ("VECTOR_STEPS", 40), ("SHARD_STEPS", 40), ("REPEATS", 1),
                        ("SYNC_RECORDS", 3)):
        monkeypatch.setattr(eb, name, value)
    rows = eb.environment_figures()
    assert len(rows) == 4
    for what, figure, _, _ in rows[:3]:
        assert "`SokobanFairnessVector-v1`'s arrays (160 env steps)" in what, what
        assert re.fullmatch(r"arrays \S+ per CPU-second \(\S+ per wall-second\); single environments \S+ per "
                            r"CPU-second \(\S+ per wall-second\): \d+× per CPU-second", figure), figure
    assert rows[0][3] == "≥ 1M per CPU-second (grid, no log)" and "every episode logged" in rows[1][0]
    assert re.fullmatch(r"\S+ ms CPU, \S+ ms wall; every record synced: \S+ ms CPU, \S+ ms wall", rows[3][1])
