"""Exact floor and ceiling of every board: fairness/baselines.json.

    python -m sokoban_tools baselines            # write fairness/baselines.json
    python -m sokoban_tools baselines --check    # recompute; fail on any difference

For every validation and training board, what a uniformly random policy
achieves within the trainer's 15 turns and what an optimal policy returns,
exactly: the dynamic programme of :mod:`sokoban_tools.evaluation.baselines`
(which ``score`` and ``compare`` also run), written down once for readers.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ..evaluation.baselines import HORIZON, POLICIES, split_baselines
from ..layout import BASELINES_FILE, DATA_DIR, TRAIN_FILE, VALIDATION_FILE
from ..protocol import PROTOCOL, STRATA
from ..records.rows import read_rows
from .artifacts import command_line, run_command, worker_processes

COMMAND = "python -m sokoban_tools baselines"


def document_bytes(document: dict) -> bytes:
    """Indented JSON with each board on one line, so 6,256 boards stay readable and small."""
    lines = {}
    for split, body in document["splits"].items():
        lines[split] = [json.dumps(e, separators=(", ", ": "), ensure_ascii=False) for e in body["boards"]]
        body["boards"] = [f"@board {split} {i}@" for i in range(len(body["boards"]))]
    text = json.dumps(document, indent=2, ensure_ascii=False)
    text = re.sub(r'"@board (\w+) (\d+)@"', lambda m: lines[m[1]][int(m[2])], text)
    return (text + "\n").encode("utf-8")


def build(data_dir: Path = DATA_DIR, workers: int = 1) -> dict[Path, bytes]:
    """The baselines of the validation and training boards in ``data_dir``, with
    ``workers`` processes (1: this process alone; the file does not depend on it)."""
    boards = {"validation": read_rows(data_dir / VALIDATION_FILE), "train": read_rows(data_dir / TRAIN_FILE)}
    with worker_processes(workers) as executor:  # both files read and checked before the work
        splits = {split: split_baselines(rows, executor) for split, rows in boards.items()}
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
        "splits": splits,
    }
    return {data_dir / BASELINES_FILE: document_bytes(document)}


def main(argv: list[str] | None = None) -> int:
    parser = command_line(COMMAND, description=__doc__.split("\n\n")[0], data_dir=DATA_DIR, workers=True)
    args = parser.parse_args(argv)
    return run_command(COMMAND, args.check, [args.data_dir / BASELINES_FILE],
                       lambda: build(args.data_dir, args.workers))


if __name__ == "__main__":
    sys.exit(main())
