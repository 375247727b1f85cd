"""fairness/baselines.json: the dynamic programme agrees with brute-force enumeration of every
action sequence, and the published figures are means of the published boards."""

import itertools
import json
import os
import shutil
import subprocess
import sys
from fractions import Fraction

import pytest

from conftest import DATA_DIR, REPO
from sokoban_tools.evaluation import baselines as exact
from sokoban_tools.pipeline import baselines
from sokoban_tools.rules.board import ACTIONS
from sokoban_tools.protocol import BOX_ON_TARGET_REWARD, STEP_PENALTY, WIN_REWARD
from sokoban_tools.rules.reward import step_reward
from sokoban_tools.runtime.env import FairSokobanEnv
from sokoban_tools.records.rows import read_rows


@pytest.fixture(scope="module")
def validation():
    return read_rows(DATA_DIR / "evaluation.jsonl")


@pytest.fixture(scope="module")
def document():
    return json.loads((DATA_DIR / "baselines.json").read_text(encoding="utf-8"))


def sample(rows):
    """The first board of each shortest length up to 6 (so short horizons can win) and a few longer."""
    firsts = {}
    for row in rows:
        firsts.setdefault(row.shortest_solution_length, row)
    return [firsts[n] for n in sorted(firsts) if n <= 6] + [r for r in rows if r.shortest_solution_length > 6][:2]


def enumerate_sequences(board, actions, horizon):
    """(solving sequences, sum of returns) over all len(actions)**horizon sequences, each
    played with the board's rules until it solves; action 0 stays put and costs the step."""
    wins, returns = 0, Fraction(0)
    for sequence in itertools.product(actions, repeat=horizon):
        position = board
        for action in sequence:
            after = position if action == 0 else position.move(action)[0]
            returns += Fraction(str(step_reward(position, after)))
            position = after
            if position.is_solved:
                wins += 1
                break
    return wins, returns


@pytest.mark.parametrize("actions, horizon", [(ACTIONS, 6), ((0, *ACTIONS), 5)])
def test_baselines__dynamic_programme_equals_enumerating_every_sequence(validation, actions, horizon):
    for row in sample(validation):
        wins, returns = enumerate_sequences(row.board, actions, horizon)
        outcome = exact.random_policy_outcomes(exact.PositionGraph([row.board]), actions, horizon)[0]
        sequences = len(actions) ** horizon
        assert outcome.success == Fraction(wins, sequences), row.task_id
        assert outcome.expected_return == returns / sequences, row.task_id


def test_baselines__dynamic_programme_equals_playing_the_runtime_environment(validation):
    row = next(r for r in validation if r.shortest_solution_length == 3)
    horizon, wins, returns = 5, 0, Fraction(0)
    env = FairSokobanEnv(max_steps=horizon)
    for sequence in itertools.product(ACTIONS, repeat=horizon):
        env.reset(row)
        for action in sequence:
            _, reward, done, info = env.step(action)
            returns += Fraction(str(reward))
            if done:
                wins += info["won"]
                break
    outcome = exact.random_policy_outcomes(exact.PositionGraph([row.board]), ACTIONS, horizon)[0]
    assert wins > 0
    assert outcome.success == Fraction(wins, 4 ** horizon)
    assert outcome.expected_return == returns / 4 ** horizon


def test_baselines__optimal_return_is_the_reward_rule_applied_to_the_shortest_solution(document):
    step, solve = Fraction(str(STEP_PENALTY)), Fraction(str(BOX_ON_TARGET_REWARD)) + Fraction(str(WIN_REWARD))
    for split in document["splits"].values():
        for board in split["boards"]:
            expected = board["shortest_solution_length"] * step + solve
            assert Fraction(board["optimal_return"]["exact"]) == expected, board["task_id"]


def test_baselines__one_entry_per_board_of_each_split_in_stored_order(document):
    for split, file in (("validation", "evaluation.jsonl"), ("train", "train.jsonl")):
        rows = read_rows(DATA_DIR / file)
        boards = document["splits"][split]["boards"]
        assert [b["task_id"] for b in boards] == [r.task_id for r in rows]
        assert [b["shortest_solution_length"] for b in boards] == [r.shortest_solution_length for r in rows]


def test_baselines__floats_are_the_fractions_and_probabilities_are_probabilities(document):
    for split in document["splits"].values():
        for board in split["boards"]:
            for policy in baselines.POLICIES:
                success = board[policy]["success"]
                assert 0 < Fraction(success["exact"]) < 1
                assert success["float"] == float(Fraction(success["exact"]))
            # a wasted turn can only lower the chance of solving in time
            assert Fraction(board["outputs_0_4"]["success"]["exact"]) <= Fraction(board["moves_1_4"]["success"]["exact"])


def test_baselines__split_stratum_and_length_figures_are_means_of_the_boards(document):
    for split in document["splits"].values():
        boards = split["boards"]
        groups = [("overall", split["overall"], boards)]
        groups += [(label, entry, [b for b in boards if b["stratum"] == label])
                   for label, entry in split["by_stratum"].items()]
        groups += [(length, entry, [b for b in boards if b["shortest_solution_length"] == int(length)])
                   for length, entry in split["by_length"].items()]
        for name, entry, members in groups:
            assert entry["boards"] == len(members), name
            for policy in baselines.POLICIES:
                for figure in ("success", "expected_return"):
                    mean = sum(Fraction(b[policy][figure]["exact"]) for b in members) / len(members)
                    assert Fraction(entry[policy][figure]["exact"]) == mean, (name, policy, figure)


def test_baselines__byte_identical_in_a_fresh_process_with_another_hash_seed(tmp_path):
    shutil.copyfile(DATA_DIR / "evaluation.jsonl", tmp_path / "evaluation.jsonl")
    train = (DATA_DIR / "train.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "train.jsonl").write_text("".join(train[:40]), encoding="utf-8")
    expected = baselines.build(tmp_path)[tmp_path / "baselines.json"]
    result = subprocess.run([sys.executable, "-m", "sokoban_tools", "baselines", "--data-dir", str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True,
                            env={**os.environ, "PYTHONHASHSEED": "2718"}, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "baselines.json").read_bytes() == expected
    assert json.loads(expected)["splits"]["train"]["overall"]["boards"] == 40


def test_baselines__blocks_in_worker_processes_give_the_same_file(tmp_path, monkeypatch):
    shutil.copyfile(DATA_DIR / "evaluation.jsonl", tmp_path / "evaluation.jsonl")
    train = (DATA_DIR / "train.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "train.jsonl").write_text("".join(train[:90]), encoding="utf-8")
    monkeypatch.setattr(exact, "BLOCK_ROWS", 32)  # validation and training in several blocks each
    alone = baselines.build(tmp_path, workers=1)
    assert baselines.build(tmp_path, workers=2) == alone


def test_baselines__a_damaged_board_file_is_refused_naming_file_and_line(tmp_path, capsys):
    lines = (DATA_DIR / "evaluation.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "evaluation.jsonl").write_text("".join(lines[:2]) + "{}\n", encoding="utf-8")
    shutil.copyfile(DATA_DIR / "train.jsonl", tmp_path / "train.jsonl")
    assert baselines.main(["--data-dir", str(tmp_path)]) == 1
    assert f"{tmp_path / 'evaluation.jsonl'}:3:" in capsys.readouterr().err
