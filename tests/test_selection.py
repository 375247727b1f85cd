"""sokoban-eval-256-v1: the published selection is re-derived here from the pool file alone.

The expected figures are computed independently of select_evaluation_256.py
(plain json, hashlib and integer arithmetic), so a bug in the selector cannot
hide behind itself.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from fractions import Fraction

import pytest

from conftest import DATA_DIR, REPO
from unavailable import unavailable
import select_evaluation_256 as selector
from sokoban_tools.rules.board import Board
from sokoban_tools.records import stratified
from sokoban_tools.records.rows import encode_row
from sokoban_tools.rules.solver import shortest_solution

POOL = "evaluation-pool-1000.jsonl"
AUDIT = "source-pool-summary.json"
OUTPUT = "evaluation.jsonl"
SELECTION = "evaluation-256.selection.json"
STRATA = (("1-4", 1, 4), ("5-8", 5, 8), ("9-14", 9, 14))
# The dataset card's table.
CARD_SOURCE = {"1-4": 531, "5-8": 412, "9-14": 57}
CARD_SELECTED = {"1-4": 136, "5-8": 105, "9-14": 15}


@pytest.fixture(scope="module")
def pool_lines():
    return (DATA_DIR / POOL).read_bytes().split(b"\n")[:-1]


@pytest.fixture(scope="module")
def pool(pool_lines):
    return [json.loads(line) for line in pool_lines]


@pytest.fixture(scope="module")
def selection():
    return json.loads((DATA_DIR / SELECTION).read_text(encoding="utf-8"))


def stratum(length):
    return next(label for label, low, high in STRATA if low <= length <= high)


def independent_quotas(counts, size):
    """Hamilton's rule in integers: floors of size*n/N, then the left-over places to the
    largest remainders size*n mod N, equal remainders in stratum order."""
    total = sum(counts.values())
    floors = {label: size * n // total for label, n in counts.items()}
    remainders = {label: size * n % total for label, n in counts.items()}
    order = sorted(range(len(counts)), key=lambda i: (-remainders[list(counts)[i]], i))
    extra = {list(counts)[i] for i in order[: size - sum(floors.values())]}
    return {label: floors[label] + (label in extra) for label in counts}, floors, remainders


def copy_inputs(tmp_path, names=(POOL, AUDIT)):
    for name in names:
        shutil.copyfile(DATA_DIR / name, tmp_path / name)
    return tmp_path


def run_selector(*args, cwd=REPO, script="select_evaluation_256.py", hash_seed="0"):
    return subprocess.run(
        [sys.executable, str(REPO / script), *args], cwd=cwd, capture_output=True, text=True,
        env={**os.environ, "PYTHONHASHSEED": hash_seed}, timeout=300,
    )


def test_selection__pool_is_the_file_the_generation_audit_recorded(selection):
    audit = json.loads((DATA_DIR / AUDIT).read_text())["pools"]["source_pool"]
    digest = hashlib.sha256((DATA_DIR / POOL).read_bytes()).hexdigest()
    assert digest == audit["sha256"] == selection["source"]["sha256"]
    assert selection["source"]["rows"] == audit["rows"] == 1000


def test_selection__stratum_counts_recomputed_from_the_pool_are_the_cards_and_the_records(pool, selection):
    counts = {label: 0 for label, _, _ in STRATA}
    for row in pool:
        counts[stratum(row["shortest_solution_length"])] += 1
    assert counts == CARD_SOURCE
    assert {label: e["source_boards"] for label, e in selection["strata"].items()} == counts
    assert {label: Fraction(e["proportion"]) for label, e in selection["strata"].items()} == {
        label: Fraction(n, len(pool)) for label, n in counts.items()}


def test_selection__quotas_follow_hamiltons_rule_with_exact_remainders(selection):
    quotas, floors, remainders = independent_quotas(CARD_SOURCE, 256)
    assert quotas == CARD_SELECTED
    for label, entry in selection["strata"].items():
        assert entry["floor"] == floors[label]
        assert Fraction(entry["remainder"]) == Fraction(remainders[label], 1000)
        assert Fraction(entry["exact_quota"]) == Fraction(256 * CARD_SOURCE[label], 1000)
        assert entry["quota"] == quotas[label]
        assert entry["extra_place"] == (quotas[label] > floors[label])
    assert selection["quota_totals"] == {
        "source_boards": sum(CARD_SOURCE.values()), "sum_of_floors": sum(floors.values()),
        "extra_places": 256 - sum(floors.values()), "selected": sum(quotas.values())}


def test_selection__equal_remainders_are_served_in_stratum_order():
    quotas = stratified.hamilton_quotas({"a": 1, "b": 1, "c": 1}, 2)
    assert [q.quota for q in quotas] == [1, 1, 0]
    assert [q.quota for q in stratified.hamilton_quotas({"a": 2, "b": 1, "c": 1}, 2)] == [1, 1, 0]
    with pytest.raises(stratified.SelectionError):
        stratified.hamilton_quotas({"a": 1}, 2)


def test_selection__each_stratum_takes_the_first_quota_by_protocol_hash_then_task_id(pool, selection):
    for label, _, _ in STRATA:
        members = [row["task_id"] for row in pool if stratum(row["shortest_solution_length"]) == label]
        ranked = sorted(members, key=lambda task_id: (
            hashlib.sha256(("sokoban-eval-256-v1:" + task_id).encode("utf-8")).digest(), task_id))
        assert selection["strata"][label]["selected_task_ids"] == ranked[:CARD_SELECTED[label]]


def test_selection__selected_lines_are_byte_identical_source_lines_in_source_order(pool_lines, selection):
    chosen = {tid for entry in selection["strata"].values() for tid in entry["selected_task_ids"]}
    expected = [line for line in pool_lines if json.loads(line)["task_id"] in chosen]
    data = (DATA_DIR / OUTPUT).read_bytes()
    assert len(chosen) == 256
    assert data == b"".join(line + b"\n" for line in expected)


def test_selection__record_states_the_selected_files_checksum_rows_and_length_span(selection):
    data = (DATA_DIR / OUTPUT).read_bytes()
    lengths = [json.loads(line)["shortest_solution_length"] for line in data.splitlines()]
    picked = selection["selected"]
    assert picked["sha256"] == hashlib.sha256(data).hexdigest()
    assert picked["rows"] == len(lengths) == 256
    assert (picked["shortest_solution_length"]["min"], picked["shortest_solution_length"]["max"]) == (
        min(lengths), max(lengths))
    assert sum(picked["shortest_solution_length"]["histogram"].values()) == 256
    for label, low, high in STRATA:
        span = selection["strata"][label]["selected_shortest_solution_length"]
        assert low <= span["min"] <= span["max"] <= high


def test_selection__rule_needs_only_the_pool_and_gives_the_same_bytes_under_another_hash_seed(tmp_path):
    copy_inputs(tmp_path)  # the pool and its audit, nothing else
    result = run_selector("--data-dir", str(tmp_path), hash_seed="4242")
    assert result.returncode == 0, result.stderr
    for name in (OUTPUT, SELECTION):
        assert (tmp_path / name).read_bytes() == (DATA_DIR / name).read_bytes(), name


def test_selection__check_passes_from_both_the_top_level_and_the_fairness_runner(tmp_path):
    for script in ("select_evaluation_256.py", "fairness/select_evaluation_256.py"):
        result = run_selector("--check", cwd=tmp_path, script=script)
        assert result.returncode == 0, result.stderr
        assert "identical" in result.stdout


def test_selection__help_names_the_check_and_data_dir_options():
    result = run_selector("--help")
    assert result.returncode == 0
    assert "--check" in result.stdout and "--data-dir" in result.stdout


def test_selection__a_pool_that_differs_from_the_audit_is_refused(tmp_path, capsys):
    copy_inputs(tmp_path)
    pool = tmp_path / POOL
    data = bytearray(pool.read_bytes())
    data[1234] ^= 0x01
    pool.write_bytes(bytes(data))
    assert selector.main(["--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert str(pool) in err and "SHA-256" in err and "refusing" in err
    assert not (tmp_path / OUTPUT).exists() and not (tmp_path / SELECTION).exists()


@pytest.mark.parametrize("field, value, wanted", [
    ("rows", "1000", "a whole number, got '1000' (str)"),  # not "has 1000 rows, the audit records 1000"
    ("rows", 1000.0, "a whole number, got 1000.0 (float)"),
    ("rows", True, "a whole number, got True (bool)"),
    ("rows", None, "a whole number, got None (NoneType)"),
    ("sha256", 123, "a string of 64 hex digits, got 123 (int)"),
    ("sha256", "ABC", "a string of 64 hex digits, got 'ABC' (str)"),
    ("sha256", ["0" * 64], "a string of 64 hex digits"),
])
def test_selection__an_audit_field_of_the_wrong_type_is_refused_as_such(tmp_path, capsys, field, value, wanted):
    copy_inputs(tmp_path)
    audit = json.loads((tmp_path / AUDIT).read_text())
    audit["pools"]["source_pool"][field] = value
    (tmp_path / AUDIT).write_text(json.dumps(audit))
    assert selector.main(["--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / AUDIT}: pools.source_pool.{field} must be {wanted}"), err
    assert "regenerate it with `python -m sokoban_tools pools`" in err and len(err.splitlines()) == 1
    assert not (tmp_path / OUTPUT).exists() and not (tmp_path / SELECTION).exists()


def replace_pool_line(tmp_path, line_no, new_line):
    """Replace one pool line and record the new file in the copied audit, so only the
    row itself is wrong."""
    pool = tmp_path / POOL
    lines = pool.read_text(encoding="utf-8").split("\n")
    lines[line_no - 1] = new_line
    pool.write_text("\n".join(lines), encoding="utf-8")
    audit = json.loads((tmp_path / AUDIT).read_text())
    audit["pools"]["source_pool"]["sha256"] = hashlib.sha256(pool.read_bytes()).hexdigest()
    (tmp_path / AUDIT).write_text(json.dumps(audit))


def test_selection__a_board_outside_the_strata_is_an_error_naming_file_and_line(tmp_path, capsys):
    copy_inputs(tmp_path)
    long_way = Board.from_xsb("######\n#    #\n#.#$##\n#  @ #\n#    #\n######")  # a 6x6 board
    actions = shortest_solution(long_way)
    assert len(actions) == 22
    replace_pool_line(tmp_path, 7, encode_row("eval-0006", 65_600, long_way, actions))
    assert selector.main(["--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / POOL}:7:" in err and "outside the strata" in err


def test_selection__a_repeated_task_id_is_an_error_naming_file_and_line(tmp_path, capsys):
    copy_inputs(tmp_path)
    lines = (tmp_path / POOL).read_text(encoding="utf-8").split("\n")
    replace_pool_line(tmp_path, 9, lines[8].replace('"eval-0008"', '"eval-0002"'))
    assert selector.main(["--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / POOL}:9:" in err and "repeats line 3" in err


def test_selection__check_names_the_file_and_line_of_a_changed_selected_row(tmp_path, capsys):
    copy_inputs(tmp_path, (POOL, AUDIT, OUTPUT, SELECTION))
    output = tmp_path / OUTPUT
    lines = output.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"seed":', b'"seed": ')
    output.write_bytes(b"\n".join(lines))
    assert selector.main(["--check", "--data-dir", str(tmp_path)]) == 1
    assert f"{output}:3:" in capsys.readouterr().err
    assert output.read_bytes() == b"\n".join(lines)  # --check never writes


# --- Facts of the spec, not of the code ------------------------------------------------------

# The published card of sokoban-eval-256-v1 (../shared/spec): source strata, quotas and the
# span of the selected lengths. Written out here so that no code under test supplies them.
SPEC_SOURCE_STRATA = {"1-4": 531, "5-8": 412, "9-14": 57}
SPEC_QUOTAS = {"1-4": 136, "5-8": 105, "9-14": 15}
SPEC_SELECTED_SPAN = (1, 11)
SPEC_POOL_SPAN = (1, 14)


def test_selection__published_files_give_the_specs_strata_quotas_and_span_1_to_11(pool):
    selected = [json.loads(line) for line in (DATA_DIR / OUTPUT).read_text(encoding="utf-8").splitlines()]
    pool_lengths = [row["shortest_solution_length"] for row in pool]
    lengths = [row["shortest_solution_length"] for row in selected]
    assert (min(lengths), max(lengths)) == SPEC_SELECTED_SPAN
    assert (min(pool_lengths), max(pool_lengths)) == SPEC_POOL_SPAN
    by_stratum = {label: sum(low <= n <= high for n in lengths) for label, low, high in STRATA}
    assert by_stratum == SPEC_QUOTAS
    assert {label: sum(low <= n <= high for n in pool_lengths) for label, low, high in STRATA} == SPEC_SOURCE_STRATA


def test_selection__source_pool_ids_are_eval_0000_to_eval_0999_in_file_order(pool):
    assert [row["task_id"] for row in pool] == [f"eval-{i:04d}" for i in range(1000)]
    train = (DATA_DIR / "train.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["task_id"] for line in train] == [f"train-{i:05d}" for i in range(5000)]


# --- The rule on a bare Python ----------------------------------------------------------------

@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """The interpreter of a new venv with nothing installed (no numpy, tqdm or datasets)."""
    import venv

    directory = tmp_path_factory.mktemp("bare") / "venv"
    try:
        venv.EnvBuilder(with_pip=False).create(directory)
    except Exception as err:  # noqa: BLE001 - any failure means the path is untested
        unavailable(f"cannot create an empty venv ({err}), so the bare-Python selector is untested")
    python = directory / "bin" / "python"
    probe = subprocess.run([str(python), "-E", "-s", "-c", "import numpy"], capture_output=True)
    assert probe.returncode != 0, "the empty venv can import numpy, so it proves nothing"
    return python


@pytest.mark.parametrize("script", ["select_evaluation_256.py", "fairness/select_evaluation_256.py"])
def test_selection__runs_on_a_bare_python_with_the_standard_library_alone(bare_python, tmp_path, script):
    def run(*args):
        return subprocess.run([str(bare_python), "-E", "-s", str(REPO / script), *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300,
                              env={"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "7"})

    checked = run("--check")
    assert checked.returncode == 0, checked.stderr
    assert "identical" in checked.stdout
    written = run("--data-dir", str(copy_inputs(tmp_path)))
    assert written.returncode == 0, written.stderr
    for name in (OUTPUT, SELECTION):
        assert (tmp_path / name).read_bytes() == (DATA_DIR / name).read_bytes(), name
