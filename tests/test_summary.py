"""fairness/summary.json: every figure is recomputed here from the board files themselves."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from conftest import DATA_DIR, REPO
from sokoban_tools.pipeline.verification import summary

FILES = {"train": "train.jsonl", "validation": "evaluation.jsonl",
         "source_pool_1000": "evaluation-pool-1000.jsonl"}
STRATA = {"1-4": (1, 4), "5-8": (5, 8), "9-14": (9, 14)}


@pytest.fixture(scope="module")
def document():
    return json.loads((DATA_DIR / "summary.json").read_text(encoding="utf-8"))


def entry_of(document, name):
    return document["archive"][name] if name == "source_pool_1000" else document["splits"][name]


@pytest.fixture
def data_copy(tmp_path):
    for name in (*FILES.values(), "summary.json"):
        shutil.copyfile(DATA_DIR / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("name", FILES)
def test_summary__figures_recomputed_from_the_file_match(document, name):
    data = (DATA_DIR / FILES[name]).read_bytes()
    rows = [json.loads(line) for line in data.splitlines()]
    lengths = [row["shortest_solution_length"] for row in rows]
    entry = entry_of(document, name)
    assert entry["file"] == f"fairness/{FILES[name]}"
    assert entry["rows"] == len(rows)
    assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert entry["task_ids"] == {"first": rows[0]["task_id"], "last": rows[-1]["task_id"]}
    stats = entry["shortest_solution_length"]
    assert (stats["min"], stats["max"], stats["sum"]) == (min(lengths), max(lengths), sum(lengths))
    assert stats["mean"] == round(sum(lengths) / len(lengths), 3)
    assert stats["histogram"] == {str(k): v for k, v in sorted(Counter(lengths).items())}
    assert entry["strata"] == {label: sum(low <= n <= high for n in lengths)
                               for label, (low, high) in STRATA.items()}
    assert entry["outside_strata"] == 0


def test_summary__split_sizes_and_strata_are_the_cards(document):
    assert {name: entry_of(document, name)["rows"] for name in FILES} == {
        "train": 5000, "validation": 256, "source_pool_1000": 1000}
    assert entry_of(document, "source_pool_1000")["strata"] == {"1-4": 531, "5-8": 412, "9-14": 57}
    assert entry_of(document, "validation")["strata"] == {"1-4": 136, "5-8": 105, "9-14": 15}


def test_summary__agrees_with_the_selection_record(document):
    selection = json.loads((DATA_DIR / "evaluation-256.selection.json").read_text(encoding="utf-8"))
    validation = entry_of(document, "validation")
    assert validation["sha256"] == selection["selected"]["sha256"]
    assert validation["shortest_solution_length"]["histogram"] == \
        selection["selected"]["shortest_solution_length"]["histogram"]
    assert entry_of(document, "source_pool_1000")["sha256"] == selection["source"]["sha256"]


def test_summary__is_byte_identical_in_a_fresh_process_with_another_hash_seed(tmp_path):
    for name in FILES.values():
        shutil.copyfile(DATA_DIR / name, tmp_path / name)
    result = subprocess.run(
        [sys.executable, "-m", "sokoban_tools", "summary", "--data-dir", str(tmp_path)], cwd=REPO,
        capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "2718"}, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "summary.json").read_bytes() == (DATA_DIR / "summary.json").read_bytes()


def test_summary__check_passes_on_the_committed_files():
    assert summary.main(["--check"]) == 0


def test_summary__check_names_the_line_of_a_changed_figure(data_copy, capsys):
    path = data_copy / "summary.json"
    lines = path.read_text(encoding="utf-8").split("\n")
    line_no = next(i for i, line in enumerate(lines, start=1) if '"mean"' in line)
    lines[line_no - 1] = lines[line_no - 1].replace('"mean": ', '"mean": 1')
    path.write_text("\n".join(lines), encoding="utf-8")
    assert summary.main(["--check", "--data-dir", str(data_copy)]) == 1
    assert f"{path}:{line_no}:" in capsys.readouterr().err


def test_summary__a_changed_split_file_fails_the_check(data_copy, capsys):
    path = data_copy / "evaluation.jsonl"
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:100] + lines[101:]))  # one board dropped
    assert summary.main(["--check", "--data-dir", str(data_copy)]) == 1
    assert str(data_copy / "summary.json") in capsys.readouterr().err


def test_summary__a_damaged_row_is_refused_naming_file_and_line(data_copy, capsys):
    path = data_copy / "train.jsonl"
    data = bytearray(path.read_bytes())
    line_start = 0
    for _ in range(41):
        line_start = data.index(b"\n", line_start) + 1  # start of line 42
    data[data.index(b'"shortest_solution_length":', line_start) + 27] ^= 0x08
    path.write_bytes(bytes(data))
    assert summary.main(["--data-dir", str(data_copy)]) == 1
    assert f"{path}:42:" in capsys.readouterr().err
