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
its only input is the pool file.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

# Standard library only, here and in the modules imported below (artifacts, files, layout,
# protocol, rows with the row checks and pins beside the loading script, and the rules in
# board), so the rule runs on a bare Python; a test keeps it so.
from sokoban_tools.files import is_sha256, sha256_bytes
from sokoban_tools.layout import (DATA_DIR, GENERATION_AUDIT_FILE, SELECTION_FILE, SOURCE_POOL_FILE,
                                  SOURCE_POOL_NAME, VALIDATION_FILE, published)
from sokoban_tools.protocol import VALIDATION_SIZE, PROTOCOL, STRATA, histogram, stratum_of
from sokoban_tools.pipeline.artifacts import command_line, json_document, run_command
from sokoban_tools.records.rows import REGENERATE_HINT, BoardRow, parse_rows, read_regular_file

COMMAND = "python select_evaluation_256.py"
POOLS_HINT = "regenerate it with `python -m sokoban_tools pools`"

RULE = [
    f"Read the source pool fairness/{SOURCE_POOL_FILE} and refuse it unless its SHA-256 and row count "
    f"are those recorded in the generation audit fairness/{GENERATION_AUDIT_FILE}.",
    "Stratify its boards by shortest solution length in player actions, including walking, "
    "measured by exact shortest-path search (the stored shortest_solution_length): "
    + ", ".join(f"{low}-{high}" for _, low, high in STRATA)
    + " actions. A board outside these strata is an error.",
    f"Quotas for {VALIDATION_SIZE} boards use Hamilton's largest-remainder rule: each stratum "
    f"gets the floor of {VALIDATION_SIZE} x (stratum boards / pool boards), and the places left "
    "over go one each to the largest remainders; equal remainders are served in stratum order "
    "(shorter solutions first).",
    f'Within each stratum, rank by SHA256(UTF8("{PROTOCOL}:" + task_id)) ascending, breaking '
    "hash ties by task ID, and select the first quota-sized subset.",
    "Write all selected rows in their original source order; each selected line is "
    "byte-identical to its source line.",
    "The rule's only input is the pool file (the audit only vouches for it): it does not "
    "depend on model outputs, success "
    "rates, training seeds or method identity. The selected IDs are frozen; no resampling "
    "occurs between methods, checkpoints or runs.",
]


class SelectionError(ValueError):
    """The source pool cannot be used for the protocol as it is."""


@dataclass(frozen=True)
class Quota:
    """One stratum's share of the evaluation set under Hamilton's rule."""

    label: str
    boards: int
    exact: Fraction  # size * boards / pool boards
    remainder_rank: int  # 1 for the largest remainder; equal remainders in stratum order
    left_over: int  # places left after every stratum's floor

    @property
    def extra_seat(self) -> bool:
        """Whether one of the places left after the floors goes to this stratum."""
        return self.remainder_rank <= self.left_over

    @property
    def floor(self) -> int:
        return self.exact.numerator // self.exact.denominator

    @property
    def remainder(self) -> Fraction:
        return self.exact - self.floor

    @property
    def quota(self) -> int:
        return self.floor + int(self.extra_seat)


def hamilton_quotas(counts: dict[str, int], size: int) -> list[Quota]:
    """Largest-remainder apportionment of ``size`` places over ``counts`` (in stratum
    order); equal remainders are served in that order."""
    total = sum(counts.values())
    if total < size:
        raise SelectionError(f"cannot select {size} boards from a pool of {total}")
    labels = list(counts)
    exact = {label: Fraction(size * counts[label], total) for label in labels}
    left_over = size - sum(q.numerator // q.denominator for q in exact.values())
    # Largest remainder first; sorted() is stable, so equal remainders keep stratum order.
    by_remainder = sorted(labels, key=lambda label: -(exact[label] % 1))
    return [Quota(label, counts[label], exact[label], by_remainder.index(label) + 1, left_over)
            for label in labels]


def rank_key(task_id: str) -> tuple[str, str]:
    """The ranking key of a board within its stratum: the protocol hash, then the ID."""
    return hashlib.sha256(f"{PROTOCOL}:{task_id}".encode("utf-8")).hexdigest(), task_id


def stratify(rows: list[BoardRow], path: Path) -> dict[str, list[BoardRow]]:
    """The rows of each stratum, in source order; a row outside every stratum or a
    repeated task ID is an error naming the file and line."""
    strata: dict[str, list[BoardRow]] = {label: [] for label, _, _ in STRATA}
    first_line: dict[str, int] = {}
    for line_no, row in enumerate(rows, start=1):
        if row.task_id in first_line:
            raise SelectionError(
                f"{path}:{line_no}: task ID {row.task_id} repeats line {first_line[row.task_id]}; "
                f"ranking needs unique IDs; {REGENERATE_HINT}"
            )
        first_line[row.task_id] = line_no
        label = stratum_of(row.shortest_solution_length)
        if label is None:
            raise SelectionError(
                f"{path}:{line_no}: {row.task_id} has a shortest solution of "
                f"{row.shortest_solution_length} actions, outside the strata "
                f"{', '.join(lab for lab, _, _ in STRATA)} of {PROTOCOL}"
            )
        strata[label].append(row)
    return strata


def exact_text(value: Fraction) -> str:
    """An exact rational as text: its decimal when that terminates, else ``p/q``."""
    for digits in range(19):
        scaled = value * 10**digits
        if scaled.denominator == 1:
            if digits == 0:
                return str(scaled.numerator)
            sign = "-" if scaled < 0 else ""
            whole, frac = divmod(abs(scaled.numerator), 10**digits)
            return f"{sign}{whole}.{frac:0{digits}d}"
    return f"{value.numerator}/{value.denominator}"


def length_range(rows: list[BoardRow]) -> dict[str, int] | None:
    lengths = [row.shortest_solution_length for row in rows]
    return {"min": min(lengths), "max": max(lengths)} if lengths else None


def read_pool(data_dir: Path) -> tuple[bytes, list[BoardRow]]:
    """The pool file's bytes and rows, refused unless it is the file the audit describes."""
    pool_path, audit_path = data_dir / SOURCE_POOL_FILE, data_dir / GENERATION_AUDIT_FILE
    audit_data = read_regular_file(audit_path, POOLS_HINT)
    try:
        audit = json.loads(audit_data)
        recorded = audit["pools"][SOURCE_POOL_NAME]
        recorded_sha, recorded_rows = recorded["sha256"], recorded["rows"]
    except (ValueError, KeyError, TypeError) as err:
        raise SelectionError(
            f"{audit_path}: cannot read pools.{SOURCE_POOL_NAME}.sha256 and .rows of the generation "
            f"audit ({type(err).__name__}: {err}); {POOLS_HINT}"
        ) from None
    for field, value, wanted in (("sha256", recorded_sha, "a string of 64 hex digits"),
                                 ("rows", recorded_rows, "a whole number")):
        if not (is_sha256(value) if field == "sha256" else isinstance(value, int) and not isinstance(value, bool)):
            raise SelectionError(
                f"{audit_path}: pools.{SOURCE_POOL_NAME}.{field} must be {wanted}, got {value!r} "
                f"({type(value).__name__}); the pools command did not write this audit: {POOLS_HINT}"
            )
    data = read_regular_file(pool_path, POOLS_HINT)
    actual = sha256_bytes(data)
    if actual != recorded_sha:
        raise SelectionError(
            f"{pool_path}: SHA-256 is {actual}, but the generation audit {audit_path.name} records "
            f"{recorded_sha}; refusing to select from a pool that differs from the generated one "
            f"(regenerate it with `python -m sokoban_tools pools`)"
        )
    rows = parse_rows(data, pool_path)
    if len(rows) != recorded_rows:
        raise SelectionError(
            f"{pool_path}: has {len(rows)} rows, the generation audit records {recorded_rows}; "
            f"regenerate both with `python -m sokoban_tools pools`"
        )
    return data, rows


def choose(strata: dict[str, list[BoardRow]], quotas: list[Quota]) -> dict[str, list[BoardRow]]:
    """Each stratum's first quota boards in rank order (the rule's step 3)."""
    return {q.label: sorted(strata[q.label], key=lambda row: rank_key(row.task_id))[: q.quota] for q in quotas}


def stratum_entries(pool_rows: int, quotas: list[Quota], chosen: dict[str, list[BoardRow]]) -> dict[str, dict]:
    """The selection record of every stratum: its span, quota arithmetic and selected IDs."""
    return {
        label: {
            "shortest_solution_length": [low, high],
            "source_boards": q.boards,
            "proportion": exact_text(Fraction(q.boards, pool_rows)),
            "exact_quota": exact_text(q.exact),
            "floor": q.floor,
            "remainder": exact_text(q.remainder),
            "remainder_rank": q.remainder_rank,
            "extra_place": q.extra_seat,
            "quota": q.quota,
            "selected_shortest_solution_length": length_range(chosen[label]),
            "selected_task_ids": [row.task_id for row in chosen[label]],
        }
        for (label, low, high), q in zip(STRATA, quotas)
    }


def selection_record(pool_data: bytes, rows: list[BoardRow], quotas: list[Quota],
                     chosen: dict[str, list[BoardRow]], selected: list[BoardRow], data: bytes) -> dict:
    """The selection file: the rule, its input, each stratum's arithmetic and the output."""
    return {
        "protocol": PROTOCOL,
        "command": COMMAND,
        "rule": RULE,
        "notes": (
            "Fractions are exact decimals written as strings. remainder_rank orders the "
            "strata by remainder, largest first, equal remainders in stratum order; the first "
            "(size - sum of floors) strata in that order get one extra place. "
            "selected_task_ids lists each stratum's selection in rank order; the selected file "
            "keeps source order."
        ),
        "source": {
            "file": published(SOURCE_POOL_FILE),
            "sha256": sha256_bytes(pool_data),
            "rows": len(rows),
            "verified_against": f"{published(GENERATION_AUDIT_FILE)} pools.{SOURCE_POOL_NAME}.sha256 and .rows",
            "shortest_solution_length": length_range(rows),
        },
        "size": VALIDATION_SIZE,
        "quota_totals": {
            "source_boards": len(rows),
            "sum_of_floors": sum(q.floor for q in quotas),
            "extra_places": sum(q.extra_seat for q in quotas),
            "selected": sum(q.quota for q in quotas),
        },
        "strata": stratum_entries(len(rows), quotas, chosen),
        "selected": {
            "file": published(VALIDATION_FILE),
            "sha256": sha256_bytes(data),
            "rows": len(selected),
            "order": "source order",
            "shortest_solution_length": {
                **length_range(selected),
                "histogram": histogram([row.shortest_solution_length for row in selected]),
            },
        },
    }


def build(data_dir: Path = DATA_DIR) -> dict[Path, bytes]:
    """Apply the rule to the pool in ``data_dir``; the two files it produces."""
    pool_data, rows = read_pool(data_dir)
    strata = stratify(rows, data_dir / SOURCE_POOL_FILE)
    quotas = hamilton_quotas({label: len(members) for label, members in strata.items()}, VALIDATION_SIZE)
    chosen = choose(strata, quotas)
    selected_ids = {row.task_id for members in chosen.values() for row in members}
    selected = [row for row in rows if row.task_id in selected_ids]  # source order
    data = "".join(row.line + "\n" for row in selected).encode("utf-8")
    record = selection_record(pool_data, rows, quotas, chosen, selected, data)
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
