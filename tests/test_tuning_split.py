"""The tuning split: 256 training boards held out by a published rule, and tuning runs that never
touch the 256 validation boards.

The selection is re-derived here from fairness/train.jsonl alone with hashlib and integer
arithmetic, independently of sokoban_tools.records.stratified, so a bug there cannot hide behind itself.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys

import pytest

from conftest import DATA_DIR, REPO

SELECTION = "tuning-256.selection.json"
SALT = "sokoban-tuning-256-v1:"
STRATA = (("1-4", 1, 4), ("5-8", 5, 8), ("9-14", 9, 14))


@pytest.fixture(scope="module")
def train_lines():
    return (DATA_DIR / "train.jsonl").read_bytes().split(b"\n")[:-1]


@pytest.fixture(scope="module")
def selection():
    return json.loads((DATA_DIR / SELECTION).read_text(encoding="utf-8"))


def independent_tuning_ids(lines) -> list[str]:
    """The tuning boards by the rule in words: Hamilton quotas over the strata, then the smallest
    salted SHA-256 within each, in source order."""
    rows = [json.loads(line) for line in lines]
    members = {label: [r["task_id"] for r in rows if low <= r["shortest_solution_length"] <= high]
               for label, low, high in STRATA}
    total = len(rows)
    floors = {label: 256 * len(ids) // total for label, ids in members.items()}
    remainders = [(-(256 * len(ids) % total), i, label) for i, (label, ids) in enumerate(members.items())]
    extra = {label for _, _, label in sorted(remainders)[: 256 - sum(floors.values())]}
    chosen = set()
    for label, ids in members.items():
        ranked = sorted(ids, key=lambda task_id: (hashlib.sha256((SALT + task_id).encode()).digest(), task_id))
        chosen |= set(ranked[: floors[label] + (label in extra)])
    return [r["task_id"] for r in rows if r["task_id"] in chosen]


def test_tuning_selection__is_the_rule_recomputed_from_the_training_pool(train_lines, selection):
    ids = independent_tuning_ids(train_lines)
    assert selection["selected"]["task_ids"] == ids and len(ids) == 256
    held = b"".join(line + b"\n" for line in train_lines if json.loads(line)["task_id"] in set(ids))
    assert selection["selected"]["sha256"] == hashlib.sha256(held).hexdigest()
    assert selection["source"]["sha256"] == hashlib.sha256((DATA_DIR / "train.jsonl").read_bytes()).hexdigest()
    assert selection["selected"]["training_rows_left"] == 5000 - 256
    assert {label: e["quota"] for label, e in selection["strata"].items()} == {"1-4": 133, "5-8": 108, "9-14": 15}


def test_tuning_selection__shares_no_board_with_the_validation_set(selection):
    validation = {json.loads(line)["task_id"] for line in (DATA_DIR / "evaluation.jsonl").read_text().splitlines()}
    assert not validation & set(selection["selected"]["task_ids"])


def test_tuning_selection__check_passes_and_a_rewrite_is_byte_identical(tmp_path):
    command = [sys.executable, "-m", "sokoban_tools", "tuning"]
    checked = subprocess.run([*command, "--check"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr
    assert f"checked fairness/{SELECTION}: identical" in checked.stdout
    for name in ("train.jsonl", "source-pool-summary.json"):
        shutil.copyfile(DATA_DIR / name, tmp_path / name)
    written = subprocess.run([*command, "--data-dir", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                             timeout=300)
    assert written.returncode == 0, written.stderr
    assert (tmp_path / SELECTION).read_bytes() == (DATA_DIR / SELECTION).read_bytes()
    (tmp_path / SELECTION).write_bytes(b"{}\n")
    stale = subprocess.run([*command, "--check", "--data-dir", str(tmp_path)], cwd=REPO, capture_output=True,
                           text=True, timeout=300)
    assert stale.returncode == 1 and f"{tmp_path / SELECTION}:1: differs" in stale.stderr


def test_tuning_selection__is_a_step_of_reproduce():
    from sokoban_tools import __main__ as command_line

    assert command_line.STEPS.index("tuning") == command_line.STEPS.index("selection") + 1
