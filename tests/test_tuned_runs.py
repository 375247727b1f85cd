"""The tuned runs on docs/training.md: a method's recipe values sit at one grid point, and a committed tuned run
that trains another point than its search chose is refused, naming the file and the --config to train; the
card's sentence on the tuned methods ranks only the pairs the seed-aware test separates."""

from __future__ import annotations

import json

import pytest

from sokoban_tools.layout import ROOT as REPO
from sokoban_tools.pipeline.publish.tuned_runs import TUNED_RUNS, tuned_logs, tuned_ranking, tuned_report, tuned_text
from sokoban_tools.records.rows import DataError
from sokoban_tools.training import tuning
from sokoban_tools.training.methods import BY_NAME


@pytest.mark.parametrize("method", sorted(BY_NAME))
def test_a_methods_recipe_values_are_its_grid_point(method):
    module = BY_NAME[method]
    recipe = {choice.name: choice.value for choice in module.RECIPE}
    values = tuning.GRID[tuning.recipe_point(module)].values()
    assert {module.TUNED[key]: value for key, value in values.items()} == {name: recipe[name]
                                                                            for name in module.TUNED.values()}


def test_a_tuned_run_of_another_grid_point_than_the_searchs_choice_is_refused(tmp_path):
    folder = tmp_path / TUNED_RUNS
    folder.mkdir(parents=True)
    (folder / "grpo-0.jsonl").write_text("")
    manifest = folder / "grpo-0.jsonl.manifest.json"
    committed = json.loads((REPO / "examples/training/grpo-0.jsonl.manifest.json").read_text())
    committed["notes"]["learner"]["tuning_grid_point"] = 3
    manifest.write_text(json.dumps(committed))
    with pytest.raises(DataError, match=rf"{manifest}: trains grid point 3, but the search chose 6 for grpo; "
                                        rf"train it again with --config 6"):
        tuned_logs(tmp_path, {"chosen": {"grpo": 6}})
    assert tuned_logs(tmp_path, {"chosen": {"ppo": 6}}) == {}


def test_without_a_search_or_tuned_runs_the_section_says_so(tmp_path):
    assert tuned_report(tmp_path, None, None) is None
    assert tuned_text(None, None) == "No tuning search is committed yet, so no method has tuned runs."
    assert tuned_ranking(None) == ""


def test_the_cards_tuned_sentence_names_the_separated_pairs_and_the_seeds():
    def pair(a, b, difference, separated):
        return {"a": a, "b": b, "separated": separated,
                "report": {"updates": [{"update": 1_000_000, "difference": difference}]}}

    runs = [{"method": m} for m in ("ppo", "grpo", "rloo") for _ in range(10)]
    report = {"runs": runs, "methods": ["ppo", "grpo", "rloo"],
              "comparisons": [pair("ppo", "grpo", 0.2, True), pair("ppo", "rloo", 0.21, True),
                              pair("grpo", "rloo", -0.01, False)]}
    assert tuned_ranking(report) == "Tuned runs, 10 seeds a method: at 1M PPO > GRPO, RLOO; others tied."
    report["comparisons"] = [pair("ppo", "grpo", -0.02, False)]
    assert tuned_ranking(report) == "Tuned runs, 10 seeds a method: no two trained methods differ."


def test_tuned_runs_paired_by_seed_with_their_recipes_say_so_and_the_smallest_p_that_leaves():
    from sokoban_tools.pipeline.publish.tuned_runs import _paired_note

    def entry(method, paired, runs=10):
        seeds = {"paired_by_seed": paired, "permutation": {"smallest_p": 2 / 2 ** runs if paired else 2 / 184_756}}
        return {"method": method, "last": {"seeds": seeds, "runs_a": [str(k) for k in range(runs)]}}

    assert _paired_note([entry("grpo", False), entry("rloo", False)]) == ""
    note = _paired_note([entry("grpo", True), entry("rloo", False), entry("ppo", True, runs=8)])
    assert "pairs them by seed, for GRPO, PPO: with 8–10 pairs the exact test's smallest p is 0.002" in note
    assert note.endswith(", 0.0059 after Holm's correction)")  # 2 / 1024 over the 3 methods compared
