"""The frozen evaluation protocol sokoban-eval-256-v1: 256 of the 1,000 source-pool boards.

    python select_evaluation_256.py            # write fairness/evaluation.jsonl and
                                               # fairness/evaluation-256.selection.json
    python select_evaluation_256.py --check    # re-derive both, fail on any difference

The rule's only input is the source pool file; the generation audit
(fairness/source-pool-summary.json) is read only to check that file's SHA-256
and row count, and a pool that differs is refused. Then:

1. Stratify by shortest solution length in player actions (walks and pushes,
   the exact breadth-first-search length stored in every row): 1-4, 5-8 and
   9-14 actions. A board outside these strata is an error.
2. Give the strata 256 places in proportion to their sizes by Hamilton's
   largest-remainder rule: every stratum gets the floor of its exact quota, and
   the places left over go one each to the largest remainders; equal
   remainders are served in stratum order (shorter solutions first).
3. Within a stratum, rank boards by SHA256(UTF8("sokoban-eval-256-v1:" + task_id))
   ascending, equal hashes by task ID, and take the first quota.
4. Write the selected rows in source order, each line byte for byte as in the
   source file.

No model output, success rate, training seed or method name can reach the rule:
its only input is the pool file. Steps 1-3 are written once, in
sokoban_tools/records/stratified.py, which the tuning split
(fairness/tuning-256.selection.json) applies to the training pool with its own salt.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Standard library only, here and in the modules imported below (artifacts, files, layout,
# protocol, the rule in stratified, rows with the row checks and pins beside the loading script,
# and the rules in board), so the rule runs on a bare Python; a test keeps it so.
from sokoban_tools.files import sha256_bytes
from sokoban_tools.layout import (DATA_DIR, GENERATION_AUDIT_FILE, SELECTION_FILE, SOURCE_POOL_FILE,
                                  SOURCE_POOL_NAME, VALIDATION_FILE, published)
from sokoban_tools.protocol import VALIDATION_SIZE, PROTOCOL, histogram
from sokoban_tools.pipeline.artifacts import command_line, json_document, run_command
from sokoban_tools.records.stratified import (length_range, read_audited_pool, rule_steps, select,
                                              selection_record)

COMMAND = "python select_evaluation_256.py"

RULE = [
    f"Read the source pool fairness/{SOURCE_POOL_FILE} and refuse it unless its SHA-256 and row count "
    f"are those recorded in the generation audit fairness/{GENERATION_AUDIT_FILE}.",
    *rule_steps(VALIDATION_SIZE, PROTOCOL),
    "Write all selected rows in their original source order; each selected line is "
    "byte-identical to its source line.",
    "The rule's only input is the pool file (the audit only vouches for it): it does not "
    "depend on model outputs, success "
    "rates, training seeds or method identity. The selected IDs are frozen; no resampling "
    "occurs between methods, checkpoints or runs.",
]


def build(data_dir: Path = DATA_DIR) -> dict[Path, bytes]:
    """Apply the rule to the pool in ``data_dir``; the two files it produces."""
    pool_data, rows = read_audited_pool(data_dir, SOURCE_POOL_FILE, SOURCE_POOL_NAME)
    selection = select(rows, data_dir / SOURCE_POOL_FILE, VALIDATION_SIZE, PROTOCOL)
    data = "".join(row.line + "\n" for row in selection.selected).encode("utf-8")
    selected = {
        "file": published(VALIDATION_FILE),
        "sha256": sha256_bytes(data),
        "rows": len(selection.selected),
        "order": "source order",
        "shortest_solution_length": {
            **length_range(selection.selected),
            "histogram": histogram([row.shortest_solution_length for row in selection.selected]),
        },
    }
    record = selection_record(PROTOCOL, COMMAND, RULE, "the selected file keeps source order.",
                              (SOURCE_POOL_FILE, SOURCE_POOL_NAME, pool_data), rows, VALIDATION_SIZE, selection,
                              selected)
    return {data_dir / VALIDATION_FILE: data, data_dir / SELECTION_FILE: json_document(record)}


def report(selection: dict) -> bool:
    """Print each stratum's quota and the selected file's figures."""
    for label, entry in selection["strata"].items():
        print(f"{label} actions: {entry['source_boards']} source boards, exact quota "
              f"{entry['exact_quota']} -> {entry['quota']} selected")
    picked = selection["selected"]
    print(f"{picked['rows']} boards, lengths {picked['shortest_solution_length']['min']}-"
          f"{picked['shortest_solution_length']['max']}, sha256 {picked['sha256']}")
    return True


def main(argv: list[str] | None = None, prog: str = COMMAND) -> int:
    """The command; ``prog`` is how the caller started it (``python -m sokoban_tools selection``)."""
    parser = command_line(
        prog,
        description=f"Select the {VALIDATION_SIZE} validation boards of {PROTOCOL} from the "
                    f"1,000-board source pool (fairness/{SOURCE_POOL_FILE}) and write "
                    f"fairness/{VALIDATION_FILE} and fairness/{SELECTION_FILE}. The rule reads "
                    "nothing but the pool file.",
        data_dir=DATA_DIR,
        data_files=True,
    )
    args = parser.parse_args(argv)
    outputs = [args.data_dir / VALIDATION_FILE, args.data_dir / SELECTION_FILE]

    def selected() -> tuple[dict[Path, bytes], dict]:
        files = build(args.data_dir)
        return files, json.loads(files[args.data_dir / SELECTION_FILE])

    return run_command(COMMAND, args.check, outputs, selected, report, args.new_release)


if __name__ == "__main__":
    sys.exit(main())
