"""The training runs' report: ties and separations as the seed-aware test decides them, the area
under each curve, and which methods were still rising."""

from pathlib import Path

import numpy as np
import pytest

from sokoban_tools.pipeline.publish import training_report
from sokoban_tools.pipeline.publish.card import _table

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def committed():
    return training_report.training_report(REPO)


def run(method: str, seed: int, points: list[int], wins: list[int]) -> dict:
    return {"method": method, "seed": seed, "points": points, "success": [(w, 256) for w in wins]}


def test_area__is_the_trapezoid_rule_over_the_steps_spanned():
    points, wins = [0, 100, 300, 1000], [10, 100, 200, 250]
    expected = np.trapezoid(np.array(wins) / 256, points) / 1000
    assert training_report.area(run("ppo", 0, points, wins)) == pytest.approx(expected, abs=1e-15)


def test_rising__is_the_gain_in_mean_success_over_the_last_three_passes():
    report = {"methods": ["ppo", "grpo"], "runs": [
        run("ppo", 0, [0, 1, 2, 3], [0, 200, 201, 202]), run("ppo", 1, [0, 1, 2, 3], [0, 200, 200, 200]),
        run("grpo", 0, [0, 1, 2, 3], [0, 100, 120, 140])]}
    gains = training_report.rising(report)
    assert gains["ppo"] == pytest.approx(1 / 256) and gains["grpo"] == pytest.approx(40 / 256)
    text = training_report.still_rising(report)
    assert "Still rising over their last three passes: GRPO (+15.6 points)" in text and "flat: PPO (+0.4" in text


def test_committed_runs__gigpo_and_grpo_are_tied_counting_seeds(committed):
    (grpo_gigpo,) = [c for c in committed["comparisons"] if (c["a"], c["b"]) == ("grpo", "gigpo")]
    last = grpo_gigpo["report"]["updates"][-1]
    assert last["update"] == 1_000_000 and last["seeds"]["paired_by_seed"]
    assert last["p_value"] == 0.25 and grpo_gigpo["p_holm"] == 0.75 and not grpo_gigpo["separated"]
    assert last["ci95"][0] < 0 < last["ci95"][1]
    assert last["seeds"]["per_board_p_value"] < 0.01  # conditional on these runs, the boards alone separate them
    values = training_report.training_values(committed, _table, {"splits": {"validation": {"overall": {
        "moves_1_4": {"success": {"float": 0.218}}}}}})
    assert values["training_ranking"] == ("At 1M env steps no two trained methods differ counting seeds; "
                                          "GRPO, GiGPO still rise.")
    assert "**Tied** at 1,000,000 env steps (not separated at 5%): GRPO - GiGPO" in values["training_comparisons"]
    assert "**Apart**" not in values["training_comparisons"]
    assert "record each run's CPU-seconds for the whole run only, not per pass" in values["training_budgets"]


def test_ranking__names_only_the_pairs_the_test_separates(committed):
    separated = {**committed, "comparisons": [
        {**c, "separated": (c["a"], c["b"]) == ("ppo", "grpo")} for c in committed["comparisons"]]}
    assert training_report.ranking(separated).startswith(
        "At 1M env steps counting seeds, PPO > GRPO; the others tied; ")
    (ppo_grpo,) = [c for c in separated["comparisons"] if c["separated"]]
    assert training_report.verdict(ppo_grpo).startswith("**Apart** at 1,000,000 env steps: PPO - GRPO +19.1%")
