"""The training runs' report: ties and separations as the seed-aware test decides them, the area
under each curve, and which methods were still rising."""

import re
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


def test_committed_runs__the_card_calls_apart_only_what_the_seed_aware_test_separates(committed):
    assert {(c["a"], c["b"]) for c in committed["comparisons"]} == set(training_report.PAIRS)
    for c in committed["comparisons"]:
        last = c["report"]["updates"][-1]
        assert last["seeds"] is not None  # several runs a side: the runs are the unit
        assert c["separated"] == (c["p_holm"] < training_report.ALPHA) and c["p_holm"] >= last["p_value"]
        if not c["separated"]:  # a tie's seed-aware interval is reported, whatever its per-board test says
            assert "**Tied**" in training_report.verdict(c)
    values = training_report.training_values(committed, _table, {"splits": {"validation": {"overall": {
        "moves_1_4": {"success": {"float": 0.218}}}}}})
    # (where, pair) the card's line calls apart: "at 200k W > L1, L2; W2, W3 > L4; at equal CPU (N s) ..."
    said = set()
    where = None
    for part in values["training_ranking"].split(": ", 1)[1].split("; "):
        starts = re.match(r"at (equal CPU \([^)]*\)|\S+) (.*)", part)
        if starts:
            where, part = "cpu" if starts.group(1).startswith("equal") else starts.group(1), starts.group(2)
        if " > " in part:
            winners, losers = part.split(" > ")
            said |= {(where, frozenset((w, l))) for w in winners.split(", ") for l in losers.split(", ")}
    label = training_report.METHODS
    apart = {(training_report.short_count(c["report"]["updates"][-1]["update"]), frozenset((label[c["a"]],
                                                                                            label[c["b"]])))
             for c in committed["comparisons"] if c["separated"]}
    apart |= {("cpu", frozenset((label[c["a"]], label[c["b"]]))) for c in committed["cpu_comparisons"] if c["separated"]}
    assert said == apart, values["training_ranking"]
    assert values["training_comparisons"].count("**Apart**") == sum(c["separated"] for c in committed["comparisons"])


def test_committed_runs__matched_cpu_time_reads_each_method_within_the_cheapest_budget(committed):
    matched = committed["matched_cpu"]
    medians = {m: sorted(r["cpu_seconds"] for r in committed["runs"] if r["method"] == m) for m in committed["methods"]}
    assert matched["cpu_seconds"] == min(training_report.median(v) for v in medians.values())
    for method, at in matched["methods"].items():
        runs = [r for r in committed["runs"] if r["method"] == method]
        assert at["cpu_seconds"] <= matched["cpu_seconds"] * (1 + 1e-9)
        later = [u for u in runs[0]["points"] if u > at["point"]]  # the next pass is past the budget
        assert not later or training_report.median(training_report.cpu_at(r, later[0]) for r in runs) > \
            matched["cpu_seconds"]
    pairs = {(c["a"], c["b"]): c for c in committed["cpu_comparisons"]}
    assert set(pairs) == set(training_report.PAIRS)
    for (a, b), c in pairs.items():
        assert (c["last"]["update_a"], c["last"]["update_b"]) == (matched["methods"][a]["point"],
                                                                  matched["methods"][b]["point"])


def test_ranking__names_only_the_pairs_the_test_separates(committed):
    first = committed["comparisons"][0]
    separated = {**committed, "comparisons": [{**c, "separated": c is first} for c in committed["comparisons"]]}
    a, b = training_report.METHODS[first["a"]], training_report.METHODS[first["b"]]
    winner, loser = (a, b) if first["report"]["updates"][-1]["difference"] > 0 else (b, a)
    at = training_report.short_count(first["report"]["updates"][-1]["update"])
    separated["cpu_comparisons"] = [{**c, "separated": False} for c in committed["cpu_comparisons"]]
    assert f": at {at} {winner} > {loser}; others tied; " in training_report.ranking(separated)
    assert training_report.verdict({**first, "separated": True}).startswith(
        f"**Apart** at {first['report']['updates'][-1]['update']:,} env steps: {a} - {b} ")
