"""The Hub's benchmark route: ``eval.yaml`` at the top of the repository and the ``.eval_results``
file ``leaderboard --eval-results`` writes for a verified entry, both parsed as YAML and checked
field by field against the Hub's specification, Inspect's own eval.yaml reader and the entry."""

from __future__ import annotations

import pytest
import yaml

from conftest import REPO
from sokoban_tools.evaluation import leaderboard
from sokoban_tools.evaluation.hub_benchmark import TASK_IDS, eval_yaml
from sokoban_tools.layout import CONFIGURATIONS, EVAL_YAML, REAL_MODEL_ENTRY, RESULTS_DIR
from sokoban_tools.records.boards import HUB_REPO_ID, RELEASE_REVISION
from sokoban_tools.records.rows import COLUMN_TYPES
from unavailable import unavailable

# The Hub's Evaluation Results specification: an eval.yaml's keys, a task's, a result's and its dataset's.
BENCHMARK_KEYS = {"name", "description", "evaluation_framework", "tasks"}
TASK_KEYS = {"id", "config", "split", "field_spec", "solvers", "scorers"}
RESULT_KEYS = {"dataset", "value", "verifyToken", "date", "source", "notes"}
DATASET_KEYS = {"id", "task_id", "config", "split", "revision"}


@pytest.fixture(scope="module")
def benchmark() -> dict:
    return yaml.safe_load((REPO / EVAL_YAML).read_text(encoding="utf-8"))


def test_eval_yaml_is_what_the_pipeline_writes_and_holds_the_hubs_fields(benchmark):
    assert (REPO / EVAL_YAML).read_text(encoding="utf-8") == eval_yaml()
    assert set(benchmark) == BENCHMARK_KEYS
    assert benchmark["name"] and benchmark["evaluation_framework"] == "inspect-ai"
    description = benchmark["description"]
    assert "success" in description and "higher is better" in description and "0-100" in description
    assert "inspect eval sokoban_tools/sokoban_fairness" in description  # the task that plays the protocol
    tasks = benchmark["tasks"]
    assert [task["id"] for task in tasks] == list(TASK_IDS.values())
    columns = {name for name, _, _ in COLUMN_TYPES}
    for task in tasks:
        assert set(task) == TASK_KEYS
        assert task["split"] in CONFIGURATIONS[task["config"]]  # a configuration and split of the card's header
        assert CONFIGURATIONS[task["config"]][task["split"]] == "fairness/evaluation.jsonl"
        spec = task["field_spec"]
        assert {spec["id"], spec["input"], spec["target"], *spec["metadata"]} <= columns


def test_eval_yaml_tasks_pass_inspects_own_eval_yaml_reader(benchmark):
    try:
        from inspect_ai._eval.task.hf import HFTask
    except ImportError:
        unavailable("inspect-ai (the inspect extra) is not installed")
    for task in benchmark["tasks"]:
        assert HFTask.model_validate(task).id == task["id"]


def test_eval_results_of_the_verified_entry_names_the_benchmark_its_score_and_its_log(benchmark, tmp_path, capsys):
    code = leaderboard.main([str(RESULTS_DIR), "--eval-results", REAL_MODEL_ENTRY, "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    (path,) = tmp_path.glob("*.yaml")
    assert f"wrote {path}" in out
    (result,) = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert set(result) <= RESULT_KEYS and set(result["dataset"]) <= DATASET_KEYS
    report = leaderboard.leaderboard(RESULTS_DIR)
    (entry,) = [row for row in report["entries"] if row["entry"] == REAL_MODEL_ENTRY]
    manifest = leaderboard.read_manifest(RESULTS_DIR / REAL_MODEL_ENTRY / leaderboard.MANIFEST)
    assert result["dataset"] == {"id": HUB_REPO_ID, "revision": RELEASE_REVISION,
                                 "task_id": TASK_IDS[manifest["settings"]["image_processing.observation"]]}
    assert result["dataset"]["task_id"] in {task["id"] for task in benchmark["tasks"]}
    assert result["value"] == entry["success"] * 100
    assert result["date"] == entry["date"]
    assert result["source"]["url"].endswith(f"/datasets/{HUB_REPO_ID}/tree/main/results/{REAL_MODEL_ENTRY}")
    assert "data.max_response_length 32" in result["notes"]  # the cut settings, named
    assert entry["model"] in path.read_text(encoding="utf-8")  # the repository it is for


def test_eval_results_refuses_a_scripted_policys_entry_in_one_line(tmp_path, capsys):
    code = leaderboard.main([str(RESULTS_DIR), "--eval-results", "optimal", "--out", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 1 and err.count("\n") == 1 and "scripted policy" in err, err
    assert not list(tmp_path.iterdir())
