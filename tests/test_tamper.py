"""A stale, truncated or modified validation file, on the current ``datasets`` release.

The loading script checks each data file against PUBLISHED_FILES while it
plans the splits (so no datasets version wraps the refusal): a non-regular file
(FIFO, symlink to /dev/zero) or a wrong size is refused before a byte is read,
then the SHA-256 and row count; the message says what it expected and found
and how to download again. The script-free path reads only
the card's YAML: it can compare split row counts (``num_examples``) and nothing
else, so a file with the right number of rows passes it. These tests pin both
facts, which the dataset card states.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import signal
import sys

import datasets
import pytest
from datasets.exceptions import DatasetGenerationError, NonMatchingSplitsSizesError

import sokoban_fairness as sf
from venvs import (EVALUATION, POOL, REPO, TAMPERINGS, content_hash, published_copy, refusal_parts, special_copy,
                   tamper, tampered_copy)


def rows(data: bytes) -> int:
    return data.count(b"\n")


def chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it, outermost first (datasets wraps errors raised while generating)."""
    out = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def assert_refused_as_published(exc: BaseException, found: bytes) -> None:
    """``exc`` is the script's ChecksumError for ``found`` in place of the evaluation file
    (not a wrapper around it), and its message names what :func:`refusal_parts` says."""
    assert type(exc).__name__ == "ChecksumError", f"not refused by the checksum first: {chain(exc)!r}"
    for part in refusal_parts(found):
        assert part in str(exc), f"{part!r} missing from: {exc}"


@pytest.fixture(params=list(TAMPERINGS))
def tampered(request, tmp_path):
    """(case, repository copy with a tampered validation file, that file's bytes)."""
    root = tampered_copy(tmp_path / "repo", request.param)
    return request.param, root, (root / EVALUATION).read_bytes()


def builder(root, cache):
    return sf.SokobanFairness(config_name="fairness", base_path=str(root), cache_dir=str(cache),
                              hash=content_hash(root))


def test_every_tampering_changes_the_file_as_its_name_says(tmp_path):
    original, pool = (REPO / EVALUATION).read_bytes(), (REPO / POOL).read_bytes()
    made = {case: tamper(published_copy(tmp_path / case), case) for case in TAMPERINGS}
    flipped = made["flipped_byte"]
    assert len(flipped) == len(original) and rows(flipped) == 256
    assert sum(a != b for a, b in zip(flipped, original)) == 1
    assert original.startswith(made["truncated_mid_line"]) and not made["truncated_mid_line"].endswith(b"\n")
    assert original.startswith(made["truncated_at_line"]) and rows(made["truncated_at_line"]) == 128
    assert made["truncated_at_line"].endswith(b"\n")
    assert made["pool_in_place"] == pool and rows(pool) == 1000


def test_an_intact_copy_builds(tmp_path):
    build = builder(published_copy(tmp_path / "repo"), tmp_path / "cache")
    build.download_and_prepare()
    assert build.as_dataset(split="validation").num_rows == 256


def test_builder_refuses_a_tampered_file(tampered, tmp_path):
    case, root, data = tampered
    with pytest.raises(Exception) as raised:
        builder(root, tmp_path / "cache").download_and_prepare()
    assert_refused_as_published(raised.value, data)


def test_builder_refuses_a_tampered_file_when_streaming(tampered, tmp_path):
    case, root, data = tampered
    with pytest.raises(sf.ChecksumError) as raised:
        next(iter(builder(root, tmp_path / "cache").as_streaming_dataset(split="validation")))
    assert_refused_as_published(raised.value, data)


@contextlib.contextmanager
def fails_instead_of_hanging(seconds: int = 120):
    """Turn a hang (reading a FIFO that never ends) into a test failure."""
    def hung(signum, frame):
        raise AssertionError(f"still reading after {seconds} s: the file was not refused at once")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("kind, found", [
    ("fifo", "a FIFO (named pipe)"),
    ("symlink_to_dev_zero", "a character device (it resolves to /dev/zero)"),
    ("three_gib_file", "found 3,221,225,472 bytes"),
])
def test_builder_refuses_a_fifo_a_device_or_a_huge_file_at_once_naming_size_and_fix(tmp_path, kind, found):
    root = special_copy(tmp_path / "repo", kind)
    with pytest.raises(sf.ChecksumError) as raised, fails_instead_of_hanging():  # raised while planning splits
        sf.SokobanFairness(config_name="fairness", base_path=str(root), cache_dir=str(tmp_path / "cache"),
                           hash="special").download_and_prepare()
    message = str(raised.value)
    expected = sf.PUBLISHED_FILES[EVALUATION]["bytes"]
    for part in (EVALUATION, str(root / EVALUATION), found, f"{expected:,} bytes", "force_redownload"):
        assert part in message, f"{part!r} missing from: {message}"


def test_a_build_with_images_without_pillow_says_so_before_generating(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)  # what `import PIL` sees when Pillow is absent
    build = sf.SokobanFairness(config_name="fairness", base_path=str(published_copy(tmp_path / "repo")),
                               cache_dir=str(tmp_path / "cache"), hash="no-pillow", with_images=True)
    with pytest.raises(ImportError, match=r"with_images=True needs Pillow.*`pip install pillow`"):
        build.download_and_prepare()


def test_refusal_is_not_cached_and_the_published_file_then_loads(tmp_path):
    root = tampered_copy(tmp_path / "repo", "pool_in_place")
    with pytest.raises(sf.ChecksumError):
        builder(root, tmp_path / "cache").download_and_prepare()
    published_copy(root)
    build = builder(root, tmp_path / "cache")
    build.download_and_prepare()
    assert build.as_dataset(split="validation").num_rows == 256


def test_script_free_path_checks_split_row_counts_only(tampered, tmp_path):
    case, root, data = tampered

    def load():
        return datasets.load_dataset(str(root), "fairness", cache_dir=str(tmp_path / "cache"))

    if case == "flipped_byte":  # same row count: nothing on this path notices
        assert load()["validation"].num_rows == 256
    elif case == "truncated_mid_line":  # refused only because the cut line is not JSON
        with pytest.raises(DatasetGenerationError) as raised:
            load()
        assert "JSON parse error" in str(raised.value.__cause__)
    else:
        with pytest.raises(NonMatchingSplitsSizesError) as raised:
            load()
        assert "num_examples=256" in str(raised.value)
        assert f"num_examples={rows(data)}" in str(raised.value)


@pytest.mark.slow
def test_script_free_streaming_checks_nothing(tmp_path):
    root = tampered_copy(tmp_path / "repo", "pool_in_place")
    streamed = datasets.load_dataset(str(root), "fairness", split="validation", streaming=True)
    assert sum(1 for _ in streamed) == 1000


def _damaged(line: str, damage: str) -> str:
    row = json.loads(line)
    if damage == "two players":
        r, c = _floor_cell(row)
        row["room_state"][r][c] = 5
    elif damage == "7x7 board":
        row["room_fixed"] = [cells + [0] for cells in row["room_fixed"]] + [[0] * 7]
        row["room_state"] = [cells + [0] for cells in row["room_state"]] + [[0] * 7]
    elif damage == "missing xsb":
        del row["xsb"]
    return json.dumps(row, separators=(",", ":"))


def _floor_cell(row) -> tuple[int, int]:
    """A plain floor cell of the board, where a second player can be put."""
    return next((r, c) for r, cells in enumerate(row["room_state"]) for c, v in enumerate(cells) if v == 1)


@pytest.mark.parametrize("damage, problem", [
    ("two players", "room_state has 2 players, expected one"),
    ("7x7 board", "room_fixed is 7 rows of [7] cells, expected a 6x6 board"),
    ("missing xsb", "keys are"),
])
def test_builder_refuses_a_malformed_row_of_a_file_pinned_by_hand_naming_file_and_line(
        tmp_path, monkeypatch, damage, problem):
    """Defence in depth: if someone re-pins a damaged file by hand, the rows are still
    refused, as the package's row reader refuses them, naming the file and line."""
    root = published_copy(tmp_path / "repo")
    lines = (root / EVALUATION).read_text(encoding="utf-8").split("\n")
    lines[6] = _damaged(lines[6], damage)
    data = "\n".join(lines).encode("utf-8")
    (root / EVALUATION).write_bytes(data)
    monkeypatch.setitem(sf.PUBLISHED_FILES, EVALUATION, {
        "sha256": hashlib.sha256(data).hexdigest(), "rows": rows(data), "bytes": len(data)})
    with pytest.raises(Exception) as raised:
        builder(root, tmp_path / "cache").download_and_prepare()
    refusal = next((exc for exc in chain(raised.value) if type(exc).__name__ == "DataError"), None)
    assert refusal is not None, f"not refused as a bad row: {chain(raised.value)!r}"
    assert str(refusal).startswith(f"{EVALUATION}:7: {problem}")
