"""Nothing an agent can observe depends on the stored solution, its length or the seed.

Each row's audit fields (``seed``, ``shortest_solution`` and so its length) are
swapped with another row's, or blanked, and the same action sequences are
played from the original and the altered row: every observation (image bytes
and text), reward, done flag and info must be identical.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from conftest import REPO
from sokoban_tools.rules.board import from_lurd
from sokoban_tools.runtime.env import MODES, FairSokobanEnv
from sokoban_tools.records.rows import BoardRow
from sokoban_tools.records.tasks import load_validation

SEQUENCES_PER_ROW = 3


def with_audit_fields(row: BoardRow, seed: int, solution: str) -> BoardRow:
    """``row`` with another seed and solution (and so solution length), in the
    parsed fields and in the stored line alike."""
    stored = json.loads(row.line)
    stored.update(seed=seed, shortest_solution=solution, shortest_solution_length=len(solution))
    line = json.dumps(stored, separators=(",", ":"))
    return dataclasses.replace(row, seed=seed, shortest_solution=solution, line=line)


def everything_observed(row: BoardRow, sequences: list[list[int]]) -> list:
    """All an agent receives while playing ``sequences`` from ``row``, as plain values."""
    envs = [FairSokobanEnv(mode) for mode in MODES]
    seen = []
    for actions in sequences:
        for env in envs:
            observation, info = env.reset(row)
            seen.append((encoded(observation), dict(info)))
            for action in actions:
                observation, reward, done, info = env.step(action)
                seen.append((encoded(observation), reward, done, dict(info)))
                if done:
                    break
    return seen


def encoded(observation) -> object:
    """An observation of any mode as a comparable plain value."""
    return observation.tobytes() if isinstance(observation, np.ndarray) else observation


@pytest.fixture(scope="module")
def rows(train_rows):
    return load_validation(REPO / "fairness/evaluation.jsonl") + train_rows[:128]


def test_leak_guard__swapping_solution_length_and_seed_between_rows_changes_no_observation(rows):
    rng = np.random.default_rng(7)
    partners = rng.permutation(len(rows))
    differing_lengths = 0
    for row, partner in zip(rows, (rows[i] for i in partners)):
        sequences = [rng.integers(0, 5, size=15).tolist() for _ in range(SEQUENCES_PER_ROW)]
        # the row's own solution, so that winning observations are covered too
        sequences.append(from_lurd(row.shortest_solution))
        swapped = with_audit_fields(row, partner.seed, partner.shortest_solution)
        blanked = with_audit_fields(row, 0, "")
        assert swapped.seed == partner.seed
        assert swapped.shortest_solution_length == partner.shortest_solution_length
        expected = everything_observed(row, sequences)
        assert everything_observed(swapped, sequences) == expected, row.task_id
        assert everything_observed(blanked, sequences) == expected, row.task_id
        differing_lengths += row.shortest_solution_length != partner.shortest_solution_length
    assert differing_lengths > len(rows) // 2  # the swaps really changed the audit fields


def test_leak_guard__the_environment_keeps_only_the_board(rows):
    env = FairSokobanEnv()
    row = rows[0]
    env.reset(row)
    kept = vars(env).values()
    assert not any(isinstance(value, BoardRow) for value in kept)
    assert row.board in kept


def test_leak_guard__observations_are_renders_and_infos_carry_only_two_flags(rows):
    env = FairSokobanEnv()
    observation, info = env.reset(rows[0])
    assert isinstance(observation, np.ndarray) and observation.shape == (96, 96, 3)
    assert set(info) == {"won"}
    observation, reward, done, info = env.step(1)
    assert set(info) == {"action_is_effective", "won"}
    assert isinstance(reward, float) and isinstance(done, bool)
