"""The stratified hash rule of sokoban-eval-256-v1, written once for every set it picks.

The validation set (``select_evaluation_256.py``, from the source pool) and the tuning
split (:mod:`.tuning_split`, from the training pool) are chosen by the same rule, each
with its own salt: stratify by shortest solution length (:data:`~sokoban_tools.protocol.STRATA`),
share the places out by Hamilton's largest-remainder rule, and within a stratum take the
boards of smallest SHA256(UTF8(salt + ":" + task_id)), ties by task ID. A pool is used
only as the generation audit recorded it (:func:`read_audited_pool`).
Standard library only, since the selector runs on a bare Python.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ..files import is_sha256, sha256_bytes
from ..layout import GENERATION_AUDIT_FILE, published
from ..protocol import STRATA, stratum_of
from .rows import REGENERATE_HINT, BoardRow, parse_rows, read_regular_file

POOLS_HINT = "regenerate it with `python -m sokoban_tools pools`"


class SelectionError(ValueError):
    """The pool cannot be used for the rule as it is."""


@dataclass(frozen=True)
class Quota:
    """One stratum's share of the selected set under Hamilton's rule."""

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


def rank_key(task_id: str, salt: str) -> tuple[str, str]:
    """The ranking key of a board within its stratum: the salted hash, then the ID."""
    return hashlib.sha256(f"{salt}:{task_id}".encode("utf-8")).hexdigest(), task_id


def stratify(rows: list[BoardRow], path: Path, rule: str) -> dict[str, list[BoardRow]]:
    """The rows of each stratum, in source order; a row outside every stratum or a
    repeated task ID is an error naming the file and line (and ``rule``, whose strata they are)."""
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
                f"{', '.join(lab for lab, _, _ in STRATA)} of {rule}"
            )
        strata[label].append(row)
    return strata


def choose(strata: dict[str, list[BoardRow]], quotas: list[Quota], salt: str) -> dict[str, list[BoardRow]]:
    """Each stratum's first quota boards in rank order."""
    return {q.label: sorted(strata[q.label], key=lambda row: rank_key(row.task_id, salt))[: q.quota]
            for q in quotas}


@dataclass(frozen=True)
class Selection:
    """The rule applied to a pool: each stratum's quota and chosen boards, and the
    chosen rows in source order."""

    quotas: list[Quota]
    chosen: dict[str, list[BoardRow]]  # by stratum, in rank order
    selected: list[BoardRow]  # source order


def select(rows: list[BoardRow], path: Path, size: int, salt: str) -> Selection:
    """``size`` boards of the pool ``rows`` (read from ``path``) by the rule with ``salt``."""
    strata = stratify(rows, path, salt)
    quotas = hamilton_quotas({label: len(members) for label, members in strata.items()}, size)
    chosen = choose(strata, quotas, salt)
    selected_ids = {row.task_id for members in chosen.values() for row in members}
    return Selection(quotas, chosen, [row for row in rows if row.task_id in selected_ids])


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


def stratum_entries(pool_rows: int, selection: Selection) -> dict[str, dict]:
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
            "selected_shortest_solution_length": length_range(selection.chosen[label]),
            "selected_task_ids": [row.task_id for row in selection.chosen[label]],
        }
        for (label, low, high), q in zip(STRATA, selection.quotas)
    }


def rule_steps(size: int, salt: str) -> list[str]:
    """The rule's steps between reading the pool and writing the selection, in words."""
    return [
        "Stratify its boards by shortest solution length in player actions, including walking, "
        "measured by exact shortest-path search (the stored shortest_solution_length): "
        + ", ".join(f"{low}-{high}" for _, low, high in STRATA)
        + " actions. A board outside these strata is an error.",
        f"Quotas for {size} boards use Hamilton's largest-remainder rule: each stratum "
        f"gets the floor of {size} x (stratum boards / pool boards), and the places left "
        "over go one each to the largest remainders; equal remainders are served in stratum order "
        "(shorter solutions first).",
        f'Within each stratum, rank by SHA256(UTF8("{salt}:" + task_id)) ascending, breaking '
        "hash ties by task ID, and select the first quota-sized subset.",
    ]


NOTES = ("Fractions are exact decimals written as strings. remainder_rank orders the "
         "strata by remainder, largest first, equal remainders in stratum order; the first "
         "(size - sum of floors) strata in that order get one extra place. "
         "selected_task_ids lists each stratum's selection in rank order; ")


def selection_record(salt: str, command: str, rule: list[str], notes: str, pool: tuple[str, str, bytes],
                     rows: list[BoardRow], size: int, selection: Selection, selected: dict) -> dict:
    """A selection file: the rule (``rule``, in words) with ``salt``, the command that applies it,
    its input ``pool`` (file, audit key, bytes) and each stratum's arithmetic, then ``selected``,
    what it produced."""
    file, pool_name, data = pool
    return {
        "protocol": salt,
        "command": command,
        "rule": rule,
        "notes": NOTES + notes,
        "source": {
            "file": published(file),
            "sha256": sha256_bytes(data),
            "rows": len(rows),
            "verified_against": f"{published(GENERATION_AUDIT_FILE)} pools.{pool_name}.sha256 and .rows",
            "shortest_solution_length": length_range(rows),
        },
        "size": size,
        "quota_totals": {
            "source_boards": len(rows),
            "sum_of_floors": sum(q.floor for q in selection.quotas),
            "extra_places": sum(q.extra_seat for q in selection.quotas),
            "selected": sum(q.quota for q in selection.quotas),
        },
        "strata": stratum_entries(len(rows), selection),
        "selected": selected,
    }


def read_audited_pool(data_dir: Path, file: str, pool_name: str) -> tuple[bytes, list[BoardRow]]:
    """The bytes and rows of the pool ``file`` in ``data_dir``, refused unless it is the file
    the generation audit records as ``pools.<pool_name>``."""
    pool_path, audit_path = data_dir / file, data_dir / GENERATION_AUDIT_FILE
    audit_data = read_regular_file(audit_path, POOLS_HINT)
    try:
        audit = json.loads(audit_data)
        recorded = audit["pools"][pool_name]
        recorded_sha, recorded_rows = recorded["sha256"], recorded["rows"]
    except (ValueError, KeyError, TypeError) as err:
        raise SelectionError(
            f"{audit_path}: cannot read pools.{pool_name}.sha256 and .rows of the generation "
            f"audit ({type(err).__name__}: {err}); {POOLS_HINT}"
        ) from None
    for field, value, wanted in (("sha256", recorded_sha, "a string of 64 hex digits"),
                                 ("rows", recorded_rows, "a whole number")):
        if not (is_sha256(value) if field == "sha256" else isinstance(value, int) and not isinstance(value, bool)):
            raise SelectionError(
                f"{audit_path}: pools.{pool_name}.{field} must be {wanted}, got {value!r} "
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
