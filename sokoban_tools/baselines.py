"""Exact floor and ceiling of every board: fairness/baselines.json.

    python -m sokoban_tools.baselines            # write fairness/baselines.json
    python -m sokoban_tools.baselines --check    # recompute; fail on any difference

A success rate means little without a floor and a ceiling. For every
validation and training board this computes, exactly and without sampling,
what a uniformly random policy achieves within the trainer's 15 turns, and
what an optimal policy (the stored shortest solution) returns:

- ``moves_1_4``: each turn one of the moves 1-4, uniformly;
- ``outputs_0_4``: each turn one of verl-agent's five outputs 0-4, uniformly,
  where 0 (an unparseable answer) spends the turn and moves nothing.

The horizon is 15 *trainer turns*: the rollout loop spends a turn on every
output, including 0, although the original environment does not count 0 as an
environment step. Rewards are the environment's (:func:`env.step_reward`, each
float read as the decimal it prints as): every turn, 0 included, costs the step
penalty; the push onto the target adds the target and win rewards and ends the
episode. Probabilities come from dynamic programming over (player, box)
positions: the number of action sequences that reach each unsolved position
after t turns, in integers, so each probability is an exact fraction over
``len(actions) ** 15`` sequences, stored as ``"numerator/denominator"`` beside
its float.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import numpy as np

from .artifacts import command_line, publish
from .board import ACTIONS, Board, from_lurd, play
from .env import DEFAULT_MAX_STEPS, step_reward
from .pools import DATA_DIR, TRAIN
from .protocol import EVALUATION_FILE, PROTOCOL, STRATA, stratum_of
from .records import BoardRow, DataError, read_rows

COMMAND = "python -m sokoban_tools.baselines"
BASELINES_FILE = "baselines.json"
HORIZON = DEFAULT_MAX_STEPS
NO_OP = 0  # verl-agent's action for an answer it cannot parse
POLICIES = {"moves_1_4": ACTIONS, "outputs_0_4": (NO_OP, *ACTIONS)}


@dataclass(frozen=True)
class RandomPolicyOutcome:
    """Exact success probability and expected return of a uniformly random policy."""

    success: Fraction
    expected_return: Fraction


@lru_cache(maxsize=None)
def _exact(value: float) -> Fraction:
    return Fraction(repr(value))


def reward(before: Board, after: Board) -> Fraction:
    """The environment's reward for one turn, as the exact decimal it prints as."""
    return _exact(step_reward(before, after))


def turn(board: Board, action: int) -> Board:
    """The position after one turn; action 0 moves nothing."""
    return board if action == NO_OP else board.move(action)[0]


WON = -1  # the successor of a turn that solves the board


@dataclass(frozen=True)
class PositionGraph:
    """Every unsolved position reachable from a board (the board first) and,
    for each and each action of :data:`POLICIES`, the next position's index (or
    :data:`WON`) and the turn's reward in units of ``1 / scale``, an integer."""

    positions: list[Board]
    turns: list[dict[int, tuple[int, int]]]
    scale: int

    @classmethod
    def explore(cls, board: Board) -> "PositionGraph":
        # Positions of one board differ only in the player's and the box's cells.
        index, positions, turns = {(board.player, board.box): 0}, [board], []
        for position in positions:  # grows while it is read: breadth-first
            outcomes = {}
            for action in POLICIES["outputs_0_4"]:
                after = turn(position, action)
                key = (after.player, after.box)
                solved = after.is_solved
                if not solved and key not in index:
                    index[key] = len(positions)
                    positions.append(after)
                outcomes[action] = (WON if solved else index[key], step_reward(position, after))
            turns.append(outcomes)
        exact = {value: _exact(value) for outcomes in turns for _, value in outcomes.values()}
        scale = math.lcm(*(value.denominator for value in exact.values()))
        units = {value: int(fraction * scale) for value, fraction in exact.items()}
        turns = [{a: (target, units[value]) for a, (target, value) in outcomes.items()} for outcomes in turns]
        return cls(positions, turns, scale)


def random_policy_outcome(graph: PositionGraph, actions: tuple[int, ...], horizon: int = HORIZON
                          ) -> RandomPolicyOutcome:
    """What a policy choosing uniformly among ``actions`` each turn achieves
    from the graph's first position within ``horizon`` turns, exactly."""
    size = len(graph.positions)
    wins, rewards, moves = [], [], ([], [])
    for source, outcomes in enumerate(graph.turns):
        chosen = [outcomes[action] for action in actions]
        wins.append(sum(target == WON for target, _ in chosen))
        rewards.append(sum(units for _, units in chosen))
        for target, _ in chosen:
            if target != WON:
                moves[0].append(target)
                moves[1].append(source)
    transition = np.zeros((size, size), dtype=np.int64)
    np.add.at(transition, moves, 1)
    wins_from = np.array(wins, dtype=np.int64)
    scaled_rewards = np.array(rewards, dtype=np.int64)
    # ways[s]: action sequences of the turns so far that reach unsolved position s.
    # Every sequence is extended to the full horizon, so a turn taken after t-1
    # turns stands for len(actions) ** (horizon - t) complete sequences.
    ways = np.zeros(size, dtype=np.int64)
    ways[0] = 1
    won = returned = 0
    for t in range(1, horizon + 1):
        completions = len(actions) ** (horizon - t)
        won += int(wins_from @ ways) * completions
        returned += int(scaled_rewards @ ways) * completions
        ways = transition @ ways
    sequences = len(actions) ** horizon
    return RandomPolicyOutcome(Fraction(won, sequences), Fraction(returned, graph.scale * sequences))


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


def board_baselines(row: BoardRow) -> dict:
    """One board's entry: its length, stratum, random-policy outcomes and optimal return."""
    entry = {"task_id": row.task_id, "shortest_solution_length": row.shortest_solution_length,
             "stratum": stratum_of(row.shortest_solution_length)}
    graph = PositionGraph.explore(row.board)
    for name, actions in POLICIES.items():
        outcome = random_policy_outcome(graph, actions)
        entry[name] = {"success": _number(outcome.success),
                       "expected_return": _number(outcome.expected_return)}
    entry["optimal_return"] = _number(optimal_return(row))
    return entry


def _mean(entries: list[dict], *keys: str) -> dict:
    total = Fraction(0)
    for entry in entries:
        value = entry
        for key in keys:
            value = value[key]
        total += Fraction(value["exact"])
    return _number(total / len(entries))


def aggregate(entries: list[dict]) -> dict:
    """Means over ``entries``: exact success probability and returns of each policy."""
    summary = {"boards": len(entries)}
    for name in POLICIES:
        summary[name] = {"success": _mean(entries, name, "success"),
                         "expected_return": _mean(entries, name, "expected_return")}
    summary["optimal_return"] = _mean(entries, "optimal_return")
    return summary


def split_baselines(rows: list[BoardRow]) -> dict:
    """Overall, per-stratum and per-length means of a split, and its boards."""
    entries = [board_baselines(row) for row in rows]
    lengths = sorted({e["shortest_solution_length"] for e in entries})
    return {
        "overall": aggregate(entries),
        "by_stratum": {label: aggregate([e for e in entries if e["stratum"] == label])
                       for label, _, _ in STRATA if any(e["stratum"] == label for e in entries)},
        "by_length": {str(n): aggregate([e for e in entries if e["shortest_solution_length"] == n])
                      for n in lengths},
        "boards": entries,
    }


def document_bytes(document: dict) -> bytes:
    """Indented JSON with each board on one line, so 6,256 boards stay readable and small."""
    lines = {}
    for split, body in document["splits"].items():
        lines[split] = [json.dumps(e, separators=(", ", ": "), ensure_ascii=False) for e in body["boards"]]
        body["boards"] = [f"@board {split} {i}@" for i in range(len(body["boards"]))]
    text = json.dumps(document, indent=2, ensure_ascii=False)
    text = re.sub(r'"@board (\w+) (\d+)@"', lambda m: lines[m[1]][int(m[2])], text)
    return (text + "\n").encode("utf-8")


def build(data_dir: Path = DATA_DIR) -> dict[Path, bytes]:
    """The baselines of the validation and training boards in ``data_dir``."""
    document = {
        "description": (
            "Exact baselines of every board. moves_1_4: a policy choosing uniformly among the moves "
            "1-4 each turn; outputs_0_4: uniformly among verl-agent's outputs 0-4, where 0 (an "
            f"unparseable answer) spends the turn and moves nothing. Horizon: {HORIZON} trainer turns "
            "(every output spends one, 0 included). Rewards per turn, 0 included: the environment's "
            "step penalty, plus its target and win rewards on the push that solves, which ends the "
            "episode. success: probability of solving within the horizon; expected_return: the "
            "random policy's expected sum of rewards; optimal_return: the return of the stored "
            "shortest solution. exact values are reduced fractions over len(actions)**horizon "
            "action sequences, computed by dynamic programming over (player, box) positions; "
            "float is the nearest double. Split, stratum and length entries are means over boards."
        ),
        "command": COMMAND,
        "protocol": PROTOCOL,
        "horizon_turns": HORIZON,
        "policies": {name: list(actions) for name, actions in POLICIES.items()},
        "strata": {label: [low, high] for label, low, high in STRATA},
        "splits": {
            "validation": split_baselines(read_rows(data_dir / EVALUATION_FILE)),
            "train": split_baselines(read_rows(data_dir / TRAIN.file)),
        },
    }
    return {data_dir / BASELINES_FILE: document_bytes(document)}


def main(argv: list[str] | None = None) -> int:
    parser = command_line(COMMAND, description=__doc__.split("\n\n")[0], data_dir=DATA_DIR)
    args = parser.parse_args(argv)
    try:
        files = build(args.data_dir)
    except DataError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0 if publish(files, args.check, COMMAND) else 1


if __name__ == "__main__":
    sys.exit(main())
