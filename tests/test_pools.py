"""The frozen pools: what every row promises, what the audit says, and that seeds rebuild them."""

import dataclasses
import json
import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import pytest

from conftest import DATA_DIR
from sokoban_tools.pipeline.generate import pools
from traces import load_traces
from sokoban_tools.pipeline.artifacts import publish
from sokoban_tools.files import sha256_file
from sokoban_tools.rules.board import from_lurd, play
from sokoban_tools.pipeline.generate.generator import GeneratorConfig
from sokoban_tools.layout import GENERATION_AUDIT_FILE
from sokoban_tools.pipeline.generate.pools import POOLS, SOURCE_POOL, TRAINING_POOL, candidate_stream, scan_pool
from sokoban_tools.protocol import stratum_of
from sokoban_published import ROW_KEYS
from sokoban_tools.rules.solver import shortest_solution
from sokoban_tools.rules.symmetry import canonical_form


@pytest.fixture(scope="module")
def audit():
    return json.loads((DATA_DIR / GENERATION_AUDIT_FILE).read_text())


@pytest.mark.parametrize("spec", POOLS, ids=lambda s: s.name)
def test_pool__has_its_size_ids_and_key_order(spec, request):
    rows = request.getfixturevalue("train_rows" if spec is TRAINING_POOL else "pool_rows")
    assert len(rows) == spec.size
    assert [r.task_id for r in rows] == [spec.task_id(i) for i in range(spec.size)]
    assert all(list(json.loads(r.line)) == list(ROW_KEYS) for r in rows)
    seeds = [r.seed for r in rows]
    assert seeds == sorted(seeds) and seeds[0] >= spec.first_seed


@pytest.mark.parametrize("spec", POOLS, ids=lambda s: s.name)
def test_pool__rows_are_compact_json_with_newline_endings(spec):
    data = (DATA_DIR / spec.file).read_bytes()
    assert b"\r" not in data and data.endswith(b"\n")
    for line in data.decode().splitlines():
        assert line == json.dumps(json.loads(line), separators=(",", ":"), ensure_ascii=False)


def test_pools__boards_are_6x6_one_box_nonterminal_and_shortest(train_rows, pool_rows):
    for row in train_rows + pool_rows:
        board = row.board
        assert (board.height, board.width) == (6, 6)
        assert not board.is_solved
        assert play(board, from_lurd(row.shortest_solution))[-1][0].is_solved
        assert row.shortest_solution_length == len(shortest_solution(board))


def test_pools__canonical_forms_are_unique_across_both_pools(train_rows, pool_rows):
    forms = Counter(canonical_form(r.board) for r in train_rows + pool_rows)
    assert len(forms) == len(train_rows) + len(pool_rows)


def test_audit__figures_agree_with_the_files(audit, train_rows, pool_rows):
    for spec, rows in ((TRAINING_POOL, train_rows), (SOURCE_POOL, pool_rows)):
        entry = audit["pools"][spec.name]
        lengths = [r.shortest_solution_length for r in rows]
        assert entry["rows"] == entry["accepted"] == len(rows)
        assert entry["sha256"] == sha256_file(DATA_DIR / spec.file)
        assert entry["seeds_scanned"]["first"] == spec.first_seed
        assert entry["seeds_scanned"]["last"] == rows[-1].seed
        histogram = {str(k): v for k, v in sorted(Counter(lengths).items())}
        assert entry["shortest_solution_length"]["histogram"] == histogram
        assert entry["shortest_solution_length"]["min"] == min(lengths)
        assert entry["shortest_solution_length"]["max"] == max(lengths)
        rejected = sum(r["count"] for r in entry["rejected"].values())
        duplicates = sum(entry["duplicates"].values())
        assert entry["candidates"] == entry["accepted"] + rejected + duplicates
        assert entry["candidates"] == rows[-1].seed - spec.first_seed + 1
        accepted_seeds = {r.seed for r in rows}
        for reason in entry["rejected"].values():
            assert len(reason["seeds"]) == reason["count"]
            assert not accepted_seeds & set(reason["seeds"])


def test_audit__source_pool_strata_are_the_cards_531_412_57(audit, pool_rows):
    strata = audit["pools"]["source_pool"]["strata"]
    assert {k: v["boards"] for k, v in strata.items()} == {"1-4": 531, "5-8": 412, "9-14": 57}
    assert Counter(stratum_of(r.shortest_solution_length) for r in pool_rows) == {
        "1-4": 531, "5-8": 412, "9-14": 57}
    lengths = [r.shortest_solution_length for r in pool_rows]
    assert (min(lengths), max(lengths)) == (1, 14)


# That seeds rebuild the pools byte for byte, in a fresh process with another
# hash seed, is checked once for every published file by tests/test_reproduce.py.


def test_scan__two_worker_processes_accept_what_one_process_accepts(train_rows):
    # Small enough to be quick, large enough to span several blocks per worker,
    # duplicates and the first rejected seed, 3248.
    spec = dataclasses.replace(TRAINING_POOL, size=1650)
    config = GeneratorConfig()
    alone = scan_pool(spec, {}, candidate_stream(spec.first_seed, config))
    with ProcessPoolExecutor(2) as executor:
        shared = scan_pool(spec, {}, candidate_stream(spec.first_seed, config, executor, blocks_ahead=4))
    assert shared.lines == alone.lines == [row.line for row in train_rows[:spec.size]]
    assert (shared.last_seed, shared.rejections, shared.duplicates) == (
        alone.last_seed, alone.rejections, alone.duplicates)
    assert alone.rejections and alone.duplicates["within_pool"] > 0


def test_check__names_the_file_and_first_differing_line(tmp_path, capsys):
    good = b"a\nb\nc\n"
    target = tmp_path / "x.jsonl"
    assert publish({target: good}, check=False, command="make it")
    umask = os.umask(0)
    os.umask(umask)
    assert target.read_bytes() == good and target.stat().st_mode & 0o777 == 0o666 & ~umask
    target.write_bytes(b"a\nB\nc\n")
    assert not publish({target: good}, check=True, command="make it")
    assert f"{target}:2:" in capsys.readouterr().err
    target.unlink()
    assert not publish({target: good}, check=True, command="make it")
    assert "missing" in capsys.readouterr().err
    assert not list(tmp_path.glob(".*.tmp"))


def test_pool__traced_boards_are_found_by_seed_not_by_their_recorded_ids(pool_rows):
    """The runtime traces (tests/data) were recorded when pool IDs were spelled
    pool-NNNN; seeds are unique, so a traced pool board is found by its seed, and its
    recorded reset state is the stored board (a player on a target drawn as 6)."""
    by_seed = {row.seed: row for row in pool_rows}
    assert len(by_seed) == len(pool_rows)
    traced = 0
    for trace in load_traces():
        if trace["source"] != "evaluation-pool-1000":
            continue
        row = by_seed[trace["seed"]]
        assert trace["task_id"].split("-")[1] == row.task_id.split("-")[1]  # same number, old spelling
        shown = [[6 if (v == 5 and f == 2) else v for v, f in zip(state_row, fixed_row)]
                 for state_row, fixed_row in zip(row.board.room_state(), row.board.room_fixed)]
        assert trace["reset"]["state"] == shown, row.task_id
        traced += 1
    assert traced == 600  # 150 pool boards x 2 modes x 2 episodes


def test_workers__must_be_a_whole_number_of_processes(capsys):
    for bad in ("0", "two"):
        with pytest.raises(SystemExit) as stop:
            pools.main(["--check", "--workers", bad])
        assert stop.value.code == 2
        assert "at least 1" in capsys.readouterr().err
