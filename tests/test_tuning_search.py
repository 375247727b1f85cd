"""The tuning search's record: written only from finished tuning runs that played no validation board and
trained on no tuning board, each method's choice by the rule stated in advance, and the committed record
covering the whole grid."""

from __future__ import annotations

import json

import pytest

from sokoban_tools.records.rows import DataError
from sokoban_tools.training import tuning
from sokoban_tools.training.tuning_search import (SEARCH, Boards, Search, build, check_run, chosen, log_path,
                                                  read_search)

TINY = Search(methods=("ppo", "grpo"), points=(0, 5), seeds=(0,), steps=4096, every=4096)


@pytest.fixture(scope="module")
def tiny_logs(sb3, tmp_path_factory):
    from sokoban_tools.training.train import train

    logs = tmp_path_factory.mktemp("search")
    for method in TINY.methods:
        for point in TINY.points:
            for seed in TINY.seeds:
                train(method, seed, log_path(logs, method, point, seed), TINY.steps, TINY.every, quiet=True,
                      tuning=True, config=point)
    return logs


def test_a_search_of_finished_tuning_runs_is_recorded_with_each_methods_choice(tiny_logs):
    record = build(tiny_logs, TINY)
    assert [(r["method"], r["config"], r["seed"]) for r in record["runs"]] == [
        ("ppo", 0, 0), ("ppo", 5, 0), ("grpo", 0, 0), ("grpo", 5, 0)]
    assert all([label for label, _ in r["passes"]] == [0, 4096] for r in record["runs"])
    assert record["grid"] == [tuning.GRID[0].values(), tuning.GRID[5].values()]
    for method in TINY.methods:
        last = {r["config"]: r["passes"][-1][1] for r in record["runs"] if r["method"] == method}
        best = max(last.values())
        assert record["chosen"][method] == min(k for k, wins in last.items() if wins == best)


def test_a_run_that_played_a_validation_board_is_refused_naming_the_line(tiny_logs, tmp_path):
    import shutil

    from sokoban_tools.records.manifest import manifest_path

    source = log_path(tiny_logs, "grpo", 5, 0)
    log = log_path(tmp_path, "grpo", 5, 0)
    log.parent.mkdir(parents=True)
    shutil.copy(manifest_path(source), manifest_path(log))
    lines = source.read_text().splitlines(keepends=True)
    boards = Boards()
    number = next(i for i, line in enumerate(lines) if json.loads(line)["phase"] == "training")
    training = lines[number]
    validation_board = sorted(boards.validation)[0]
    for board, problem in ((validation_board, "training episode on validation board"),
                           (sorted(boards.held_out)[0], "training episode on tuning board")):
        lines[number] = training.replace(json.loads(training)["task_id"], board)
        log.write_text("".join(lines))
        with pytest.raises(DataError, match=rf"{log}:{number + 1}: {problem} {board}"):
            check_run(log, "grpo", 5, 0, TINY, boards)


def test_a_missing_or_mislabelled_run_is_refused_with_the_command_that_makes_it(tiny_logs, tmp_path):
    boards = Boards()
    with pytest.raises(DataError, match=r"missing: .*sweep --method ppo --seeds 0 --tuning --config 5"):
        check_run(log_path(tmp_path, "ppo", 5, 0), "ppo", 5, 0, TINY, boards)
    with pytest.raises(DataError, match=r"tuning_grid_point 0 \(the search's: 5\)"):
        check_run(log_path(tiny_logs, "ppo", 0, 0), "ppo", 5, 0, TINY, boards)


def test_committed_search__covers_every_method_point_and_seed_and_its_choices_follow_the_rule():
    record = read_search()
    assert record is not None, f"{SEARCH} is not committed: python -m sokoban_tools tuning-search --logs DIR"
    search = Search()
    assert [(r["method"], r["config"], r["seed"]) for r in record["runs"]] == [
        (m, k, s) for m in search.methods for k in search.points for s in search.seeds]
    assert (record["steps"], record["every"]) == (tuning.STEPS, tuning.EVAL_EVERY)
    assert all(r["passes"][-1][0] == tuning.STEPS and r["env_steps"] >= tuning.STEPS for r in record["runs"])
    assert record["chosen"] == chosen(record["runs"], search.methods)
