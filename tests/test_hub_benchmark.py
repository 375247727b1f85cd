"""The Hub's benchmark route: ``eval.yaml`` at the top of the repository and the ``.eval_results``
file ``leaderboard --eval-results`` writes for a verified entry, both parsed as YAML and checked
field by field against the Hub's specification, Inspect's own eval.yaml reader and the entry."""

from __future__ import annotations

import pytest
import yaml

from conftest import REPO
from sokoban_tools.evaluation import leaderboard
from sokoban_tools.evaluation.hub_benchmark import PLAN_TASK, TASK_IDS, eval_yaml
from sokoban_tools.layout import CONFIGURATIONS, EVAL_YAML, REAL_MODEL_ENTRY, RESULTS_DIR
from sokoban_tools.records.boards import HUB_REPO_ID, RELEASE_REVISION
from sokoban_tools.records.manifest import read_manifest
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
    assert "accuracy" in description and "higher is better" in description and "0-100" in description
    assert "inspect eval sokoban_tools/sokoban_fairness" in description  # the task that plays the protocol
    tasks = benchmark["tasks"]
    assert [task["id"] for task in tasks] == [PLAN_TASK]  # named for what it asks; never "visual" without an image
    columns = {name for name, _, _ in COLUMN_TYPES}
    for task in tasks:
        assert set(task) == TASK_KEYS
        assert task["split"] in CONFIGURATIONS[task["config"]]  # a configuration and split of the card's header
        assert CONFIGURATIONS[task["config"]][task["split"]] == "fairness/evaluation.jsonl"
        spec = task["field_spec"]
        assert {spec["id"], spec["input"], spec["target"], *spec["metadata"]} <= columns


def _shortest_solutions(row) -> list[str]:
    """Every shortest solution of a board, in LURD, by a breadth-first search that keeps all parents."""
    from sokoban_tools.rules.board import LURD_WALK, layout

    board = row.board
    room = layout(board.room_fixed)
    start, target = (room.cell(board.player), room.cell(board.box)), room.cell(board.target)
    depth, parents, frontier = {start: 0}, {start: []}, [start]
    while frontier and not any(state[1] == target for state in frontier):
        following = []
        for state in frontier:
            for action, player, box, pushed in room.moves(*state):
                step = (player, box)
                letter = LURD_WALK[action].upper() if pushed else LURD_WALK[action]
                if step not in depth:
                    depth[step], parents[step] = depth[state] + 1, []
                    following.append(step)
                if depth[step] == depth[state] + 1:
                    parents[step].append((state, letter))
        frontier = following

    def paths(state) -> list[str]:
        return [""] if state == start else [path + letter for before, letter in parents[state]
                                             for path in paths(before)]

    return sorted({path for state in frontier if state[1] == target for path in paths(state)})


def test_inspects_own_eval_yaml_reader_builds_only_the_plan_task_and_it_scores_what_it_asks(
        benchmark, monkeypatch, tmp_path):
    """Inspect's reader (``task_create_from_hf``, as ``inspect eval hf/<dataset>`` runs it) on the file,
    its download and dataset pointed at the clone; each task it builds is played against three
    answer sheets: the stored solutions (100%), another shortest solution where a board has one
    (not what the task asks: 0% there), and random moves of the right length (near 0%)."""
    import asyncio
    import random

    try:
        import huggingface_hub
        from inspect_ai._eval.task import hf
        from inspect_ai.dataset import json_dataset
        from inspect_ai.model import ChatMessageUser, ModelName, ModelOutput
        from inspect_ai.scorer import Target
        from inspect_ai.solver import TaskState
    except ImportError:
        unavailable("inspect-ai (the inspect extra) is not installed")
    from sokoban_tools.records.tasks import load_validation

    for task in benchmark["tasks"]:
        assert hf.HFTask.model_validate(task).id == task["id"]
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda **_: str(REPO / EVAL_YAML))
    read = []

    def local_dataset(path, revision, name, split, sample_fields):
        read.append((path, name, split))
        return json_dataset(str(REPO / CONFIGURATIONS[name][split]), sample_fields=sample_fields)

    monkeypatch.setattr(hf, "hf_dataset", local_dataset)
    tasks = hf.task_create_from_hf(f"hf/{HUB_REPO_ID}")
    assert [task.name for task in tasks] == [f"hf/{HUB_REPO_ID}"] and read == [(HUB_REPO_ID, "fairness", "validation")]
    rows = {row.task_id: row for row in load_validation()}
    others = {task_id: [s for s in _shortest_solutions(row) if s.lower() != row.shortest_solution.lower()]
              for task_id, row in rows.items()}
    assert sum(bool(o) for o in others.values()) >= 10  # boards with several shortest solutions (18 of 256)
    order = {letter: rank for rank, letter in enumerate("udlr")}
    for task_id, row in rows.items():  # the stored one is the first in the order the prompt states: one answer
        first = min(_shortest_solutions(row), key=lambda lurd: [order[letter.lower()] for letter in lurd])
        assert row.shortest_solution == first, task_id
    by_xsb = {row.board.xsb(): row for row in rows.values()}
    rng = random.Random(0)

    async def play(task, answer) -> dict[str, bool]:
        (scorer,) = task.scorer
        results = {}
        for sample in task.dataset:
            state = TaskState(ModelName("mockllm/model"), sample.id, 1, sample.input,
                              [ChatMessageUser(content=sample.input)])
            for solver in task.solver[:-1]:  # the prompt, as the reader built it (generate is the model's)
                state = await solver(state, None)
            assert sample.input in state.user_prompt.text and "up, down, left, right" in state.user_prompt.text
            text = answer(by_xsb[sample.input])  # the reader keeps no id (field_spec.id is not read): the board
            if text is None:
                continue
            state.output = ModelOutput.from_content("mockllm/model", text)
            results[sample.input] = (await scorer(state, Target(sample.target))).value == "C"
        return results

    for task in tasks:
        assert len(task.dataset) == 256
        stored = asyncio.run(play(task, lambda row: row.shortest_solution))
        assert all(stored.values()) and len(stored) == 256  # the shortest demo model: 100%
        other = asyncio.run(play(task, lambda row: others[row.task_id][0] if others[row.task_id] else None))
        assert other and not any(other.values())  # another shortest solution is not the one asked for
        noise = asyncio.run(play(task, lambda row: "".join(rng.choice("udlr") for _ in row.shortest_solution)))
        assert sum(noise.values()) <= 256 * 0.1  # random moves: near the floor


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
    manifest = read_manifest(RESULTS_DIR / REAL_MODEL_ENTRY / leaderboard.MANIFEST)
    assert result["dataset"] == {"id": HUB_REPO_ID, "revision": RELEASE_REVISION,
                                 "task_id": TASK_IDS[manifest["settings"]["image_processing.observation"]]}
    assert result["dataset"]["task_id"] not in {task["id"] for task in benchmark["tasks"]}  # the turn, not the plan task
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
