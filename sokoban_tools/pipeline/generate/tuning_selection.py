"""Write the tuning split's selection file, so anyone can recompute which training boards it holds out.

    python -m sokoban_tools tuning            # write fairness/tuning-256.selection.json
    python -m sokoban_tools tuning --check    # re-derive it, fail on any difference

The rule is sokoban-eval-256-v1's (:mod:`sokoban_tools.records.stratified`) with the salt
``sokoban-tuning-256-v1``, applied to the training pool as the generation audit recorded it;
:mod:`sokoban_tools.records.tuning_split` applies the same code when a tuning run starts, so
the file and the runs cannot disagree. No data file is written: ``fairness/train.jsonl``
stays whole, and a tuning run leaves these boards out of its training draws itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ...files import json_document
from ...layout import (DATA_DIR, GENERATION_AUDIT_FILE, TRAIN_FILE, TRAINING_POOL_NAME, TUNING_SELECTION_FILE,
                       published)
from ...protocol import PROTOCOL, histogram
from ...records.stratified import length_range, read_audited_pool, rule_steps, selection_record
from ...records.tuning_split import TUNING_PROTOCOL, TUNING_SIZE, tuning_split
from ..artifacts import command_line, run_command

COMMAND = "python -m sokoban_tools tuning"
RULE = [
    f"Read the training pool fairness/{TRAIN_FILE} and refuse it unless its SHA-256 and row count "
    f"are those recorded in the generation audit fairness/{GENERATION_AUDIT_FILE}.",
    *rule_steps(TUNING_SIZE, TUNING_PROTOCOL),
    f"The selected boards are the tuning split: a tuning run (`python -m sokoban_tools train --tuning`) "
    f"validates on them, once each in stored order, and draws its training boards from the rest of the pool "
    f"only; it never plays a validation board of {PROTOCOL}, and score, compare and leaderboard refuse its "
    f"log. fairness/{TRAIN_FILE} is unchanged.",
    "The rule's only input is the pool file (the audit only vouches for it): it does not depend on model "
    "outputs, success rates, training seeds or method identity.",
]


def build(data_dir: Path = DATA_DIR) -> dict[Path, bytes]:
    """Apply the rule to the training pool in ``data_dir``; the selection file."""
    pool_data, rows = read_audited_pool(data_dir, TRAIN_FILE, TRAINING_POOL_NAME)
    split = tuning_split(rows, data_dir / TRAIN_FILE)
    held = split.held_out
    selected = {
        "of": published(TRAIN_FILE),
        "sha256": split.sha256,
        "rows": len(held),
        "training_rows_left": len(split.rest),
        "order": "source order",
        "shortest_solution_length": {**length_range(list(held)),
                                     "histogram": histogram([row.shortest_solution_length for row in held])},
        "task_ids": [row.task_id for row in held],
    }
    notes = ("selected.task_ids lists every tuning board in source order, and selected.sha256 is the SHA-256 of "
             "their lines in that order, as a file of them would hold them: the evaluation_sha256 of a tuning "
             "run's validation records.")
    record = selection_record(TUNING_PROTOCOL, COMMAND, RULE, notes, (TRAIN_FILE, TRAINING_POOL_NAME, pool_data),
                              rows, TUNING_SIZE, split.selection, selected)
    return {data_dir / TUNING_SELECTION_FILE: json_document(record)}


def report(selection: dict) -> bool:
    """Print each stratum's quota and the split's figures."""
    for label, entry in selection["strata"].items():
        print(f"{label} actions: {entry['source_boards']} training boards, exact quota "
              f"{entry['exact_quota']} -> {entry['quota']} held out")
    held = selection["selected"]
    print(f"{held['rows']} tuning boards, {held['training_rows_left']} left to train on; sha256 {held['sha256']}")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = command_line(
        COMMAND,
        description=f"Select the {TUNING_SIZE} training boards of the tuning split ({TUNING_PROTOCOL}) and write "
                    f"{published(TUNING_SELECTION_FILE)}; the data files are unchanged.",
        data_dir=DATA_DIR,
    )
    args = parser.parse_args(argv)
    output = args.data_dir / TUNING_SELECTION_FILE

    def selected() -> tuple[dict[Path, bytes], dict]:
        files = build(args.data_dir)
        return files, json.loads(files[output])

    return run_command(COMMAND, args.check, [output], selected, report)


if __name__ == "__main__":
    sys.exit(main())
