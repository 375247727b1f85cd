"""Exact floor and ceiling of every board: what a uniformly random policy and an optimal one achieve.

A success rate means little without a floor and a ceiling. For each board this
computes, exactly and without sampling, what a uniformly random policy
achieves within the trainer's 15 turns, and what an optimal policy (the stored
shortest solution) returns:

- ``moves_1_4``: each turn one of the moves 1-4, uniformly;
- ``outputs_0_4``: each turn one of verl-agent's five outputs 0-4, uniformly,
  where 0 (an unparseable answer) spends the turn and moves nothing.

The horizon is 15 *trainer turns*: the rollout loop spends a turn on every
output, including 0, although the original environment does not count 0 as an
environment step. Rewards are the environment's (:func:`sokoban_tools.rules.reward.step_reward`, each
float read as the decimal it prints as): every turn, 0 included, costs the step
penalty; the push onto the target adds the target and win rewards and ends the
episode. Probabilities come from dynamic programming over (player, box)
positions: the number of action sequences that reach each unsolved position
after t turns, in integers, so each probability is an exact fraction over
``len(actions) ** 15`` sequences, stored as ``"numerator/denominator"`` beside
its float. ``python -m sokoban_tools baselines`` writes them to
fairness/baselines.json; ``score`` and ``compare`` print them beside a run's success.
"""

from __future__ import annotations

import math
from collections import defaultdict
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..protocol import DEFAULT_MAX_STEPS, STRATA, stratum_of
from ..records.rows import BoardRow, DataError
from ..rules.board import ACTIONS, Board, from_lurd, layout, play
from ..rules.reward import step_reward

HORIZON = DEFAULT_MAX_STEPS
NO_OP = 0  # verl-agent's action for an answer it cannot parse
POLICIES = {"moves_1_4": ACTIONS, "outputs_0_4": (NO_OP, *ACTIONS)}


@dataclass(frozen=True)
class RandomPolicyOutcome:
    """Exact success probability and expected return of a uniformly random policy."""

    success: Fraction
    expected_return: Fraction


@lru_cache(maxsize=None)
def _exact(value: float) -> Fraction:  # a handful of distinct rewards, met thousands of times
    return Fraction(repr(value))


def reward(before: Board, after: Board) -> Fraction:
    """The environment's reward for one turn, as the exact decimal it prints as."""
    return _exact(step_reward(before, after))


class PositionGraph:
    """Every (player, box) position of a set of boards and, for each action of
    ``outputs_0_4``, the position a turn leads to, or ``-1`` where the turn solves.

    Positions are numbered board by board: board ``i`` owns ``k_i * k_i``
    numbers, ``player * k_i + box`` over its ``k_i`` open cells (pairs that
    cannot occur are never reached), so one array step plays a turn of every
    board at once. Action 0 and blocked moves stay put.
    """

    def __init__(self, boards: list[Board]):
        starts, boards_of, successors, offset = [], [], [], 0
        for number, board in enumerate(boards):
            open_cells, steps = _open_cells_and_steps(board)
            k = len(open_cells)
            local = {cell: i for i, cell in enumerate(open_cells)}
            player, box = np.divmod(np.arange(k * k), k)
            columns = [player * k + box]  # action 0
            for ahead, beyond in steps:  # actions 1-4, (k,) local cells or -1
                step_to = ahead[player]
                pushes = step_to == box
                push_to = np.where(pushes, beyond[player], box)
                blocked = (step_to < 0) | (push_to < 0)
                columns.append(np.where(blocked, player * k + box, step_to * k + push_to))
            following = np.stack(columns, axis=1)
            room = layout(board.room_fixed)
            solved = following % k == local[room.cell(board.target)]
            successors.append(np.where(solved, -1, following + offset))
            starts.append(offset + local[room.cell(board.player)] * k + local[room.cell(board.box)])
            boards_of.append(np.full(k * k, number))
            offset += k * k
        self.starts = np.array(starts)
        self.board_of = np.concatenate(boards_of)
        self.successors = np.concatenate(successors)  # (positions, 5): outputs 0-4
        self.boards = len(boards)
        probe = boards[0]
        self.step, self.win = reward(probe, probe), reward(probe, replace(probe, box=probe.target))


def _open_cells_and_steps(board: Board) -> tuple[list[int], list[tuple[np.ndarray, np.ndarray]]]:
    """A board's open cells (flat, from :func:`board.layout`) and, per action 1-4,
    each cell's next and next-but-one open cell in that direction as local
    indices (-1 where closed): the move rule's own tables."""
    room = layout(board.room_fixed)
    open_cells = [cell for cell, exits in enumerate(room.exits) if exits]
    local = {cell: i for i, cell in enumerate(open_cells)}
    steps = []
    for action in ACTIONS:
        ahead, beyond = np.full(len(open_cells), -1), np.full(len(open_cells), -1)
        for cell in open_cells:
            for exit_action, next_cell, next_but_one, _ in room.exits[cell]:
                if exit_action == action:
                    ahead[local[cell]] = local[next_cell]
                    beyond[local[cell]] = local.get(next_but_one, -1)
        steps.append((ahead, beyond))
    return open_cells, steps


def random_policy_outcomes(graph: PositionGraph, actions: tuple[int, ...], horizon: int = HORIZON
                           ) -> list[RandomPolicyOutcome]:
    """What a policy choosing uniformly among ``actions`` each turn achieves on
    each board of ``graph`` within ``horizon`` turns, exactly.

    ``ways[s]`` counts the action sequences of the turns so far that reach
    unsolved position ``s``; every sequence is extended to the full horizon, so
    a turn taken after t-1 turns stands for ``len(actions) ** (horizon - t)``
    complete sequences. Counts stay below 2**53, where float64 sums are exact.
    """
    if len(actions) ** horizon >= 2 ** 53:
        raise ValueError(f"{len(actions)}**{horizon} sequences do not fit exact float64 counts")
    successors = graph.successors[:, list(actions)]
    wins_from = (successors < 0).sum(axis=1)
    scale = math.lcm(graph.step.denominator, graph.win.denominator)
    step_units, win_units = int(graph.step * scale), int(graph.win * scale)
    units_from = wins_from * win_units + (len(actions) - wins_from) * step_units
    moves = successors >= 0
    sources = np.repeat(np.arange(len(successors)), moves.sum(axis=1))
    targets = successors[moves]
    ways = np.zeros(len(successors))
    ways[graph.starts] = 1
    won = np.zeros(graph.boards, dtype=np.int64)
    returned = np.zeros(graph.boards, dtype=np.int64)
    for t in range(1, horizon + 1):
        completions = len(actions) ** (horizon - t)
        won += np.bincount(graph.board_of, ways * wins_from, graph.boards).astype(np.int64) * completions
        returned += np.bincount(graph.board_of, ways * units_from, graph.boards).astype(np.int64) * completions
        ways = np.bincount(targets, ways[sources], len(successors))
    sequences = len(actions) ** horizon
    return [RandomPolicyOutcome(Fraction(int(w), sequences), Fraction(int(r), scale * sequences))
            for w, r in zip(won, returned)]


def optimal_return(row: BoardRow, horizon: int = HORIZON) -> Fraction:
    """The return of the stored shortest solution, the best any policy can do
    (every turn costs the same and the win pays once)."""
    actions = from_lurd(row.shortest_solution)
    if len(actions) > horizon:
        raise DataError(f"{row.task_id}: its shortest solution has {len(actions)} actions, "
                        f"beyond the {horizon}-turn horizon; regenerate the pools")
    before, total = row.board, Fraction(0)
    for after, _ in play(row.board, actions):
        total += reward(before, after)
        before = after
    return total


def _number(value: Fraction) -> dict:
    return {"exact": f"{value.numerator}/{value.denominator}", "float": float(value)}


def board_baselines(rows: list[BoardRow]) -> list[dict]:
    """Each board's entry: its length, stratum, random-policy outcomes and optimal return."""
    entries = [{"task_id": row.task_id, "shortest_solution_length": row.shortest_solution_length,
                "stratum": stratum_of(row.shortest_solution_length)} for row in rows]
    graph = PositionGraph([row.board for row in rows])
    for name, actions in POLICIES.items():
        for entry, outcome in zip(entries, random_policy_outcomes(graph, actions)):
            entry[name] = {"success": _number(outcome.success),
                           "expected_return": _number(outcome.expected_return)}
    for entry, row in zip(entries, rows):
        entry["optimal_return"] = _number(optimal_return(row))
    return entries


def _mean(entries: list[dict], *keys: str) -> dict:
    """The exact mean of one value of every entry. The stored fractions have few
    distinct denominators (divisors of the sequence counts), so numerators are summed
    per denominator in integers and only those few sums become fractions."""
    numerators: dict[int, int] = defaultdict(int)
    for entry in entries:
        value = entry
        for key in keys:
            value = value[key]
        numerator, denominator = value["exact"].split("/")
        numerators[int(denominator)] += int(numerator)
    total = sum((Fraction(n, d) for d, n in numerators.items()), Fraction(0))
    return _number(total / len(entries))


def aggregate(entries: list[dict]) -> dict:
    """Means over ``entries``: exact success probability and returns of each policy."""
    summary = {"boards": len(entries)}
    for name in POLICIES:
        summary[name] = {"success": _mean(entries, name, "success"),
                         "expected_return": _mean(entries, name, "expected_return")}
    summary["optimal_return"] = _mean(entries, "optimal_return")
    return summary


# Boards per unit of work a worker computes; each board's figures depend on it alone.
BLOCK_ROWS = 1000


def split_baselines(rows: list[BoardRow], executor: Executor | None = None) -> dict:
    """Overall, per-stratum and per-length means of a split, and its boards (computed
    in blocks by ``executor``'s workers if given)."""
    blocks = [rows[start:start + BLOCK_ROWS] for start in range(0, len(rows), BLOCK_ROWS)]
    computed = executor.map(board_baselines, blocks) if executor is not None else map(board_baselines, blocks)
    entries = [entry for block in computed for entry in block]
    lengths = sorted({e["shortest_solution_length"] for e in entries})
    return {
        "overall": aggregate(entries),
        "by_stratum": {label: aggregate([e for e in entries if e["stratum"] == label])
                       for label, _, _ in STRATA if any(e["stratum"] == label for e in entries)},
        "by_length": {str(n): aggregate([e for e in entries if e["shortest_solution_length"] == n])
                      for n in lengths},
        "boards": entries,
    }


POLICY_LABELS = {"moves_1_4": "random moves 1–4", "outputs_0_4": "random outputs 0–4"}


def _reference_entry(entry: dict) -> dict:
    """One aggregate of :func:`split_baselines` as floors and the ceiling: success and return."""
    out = {POLICY_LABELS[name]: {"success": entry[name]["success"]["float"],
                                 "expected_return": entry[name]["expected_return"]["float"]} for name in POLICIES}
    out["optimal"] = {"success": 1.0, "expected_return": entry["optimal_return"]["float"]}
    return out


def reference_lines(rows: list[BoardRow]) -> dict:
    """The floors (uniformly random policies) and the ceiling (an optimal policy, which solves
    every board within the horizon) of the boards ``rows``, overall and per stratum, exact
    (floats of the fractions fairness/baselines.json stores for the same boards)."""
    computed = split_baselines(rows)
    return {
        "horizon_turns": HORIZON,
        "overall": _reference_entry(computed["overall"]),
        "by_stratum": {label: _reference_entry(entry) for label, entry in computed["by_stratum"].items()},
    }
