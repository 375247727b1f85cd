"""Writers: a set of files is replaced as a set, and unwritable outputs are refused up front.

A run killed between two renames must leave a state that every ``--check``
and the next write report as a mixed set, saying to run ``reproduce``; an
unwritable output must be reported in one line, before any work.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import select_evaluation_256 as selector
from conftest import DATA_DIR, REPO
from sokoban_tools.pipeline import artifacts
from sokoban_tools.pipeline.generate import pools
from sokoban_tools.pipeline.verification import summary, verify
from sokoban_tools.pipeline.artifacts import JOURNAL, REPRODUCE, clear_interrupted_writes, publish
from sokoban_tools.layout import (GENERATION_AUDIT_FILE, SELECTION_FILE, SOURCE_POOL_FILE, SUMMARY_FILE, TRAIN_FILE,
                                  VALIDATION_FILE, VERIFICATION_FILE)

OUTPUTS = (VALIDATION_FILE, SELECTION_FILE)
STALE = b"an older release\n"


@pytest.fixture
def data_dir(tmp_path):
    """The selector's inputs, and stale outputs that a good run replaces."""
    for name in (SOURCE_POOL_FILE, GENERATION_AUDIT_FILE):
        shutil.copyfile(DATA_DIR / name, tmp_path / name)
    for name in OUTPUTS:
        (tmp_path / name).write_bytes(STALE)
    return tmp_path


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name == JOURNAL or p.name.endswith(".tmp"))


def run_selector(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "select_evaluation_256.py"), "--data-dir", str(data_dir),
                           *args], capture_output=True, text=True, timeout=300)


def test_a_kill_between_renames_is_reported_by_check_and_by_the_next_write(data_dir):
    # The selector, killed (SIGKILL: no cleanup runs) just before it renames its second file.
    program = textwrap.dedent(f"""
        import os, runpy, signal, sys
        rename = os.replace
        def dying_replace(source, target):
            if str(target).endswith({SELECTION_FILE!r}):
                os.kill(os.getpid(), signal.SIGKILL)
            rename(source, target)
        os.replace = dying_replace
        sys.argv = ["select_evaluation_256.py", "--data-dir", {str(data_dir)!r}]
        runpy.run_path({str(REPO / "select_evaluation_256.py")!r}, run_name="__main__")
    """)
    killed = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, timeout=300)
    assert killed.returncode == -9
    assert (data_dir / VALIDATION_FILE).read_bytes() == (DATA_DIR / VALIDATION_FILE).read_bytes()
    assert (data_dir / SELECTION_FILE).read_bytes() == STALE  # a mixed set on disk
    assert JOURNAL in leftovers(data_dir)

    for args in (["--check"], []):  # every check and the next write refuse, naming the fix
        refused = run_selector(data_dir, *args)
        assert refused.returncode == 1, args
        assert f"{data_dir / JOURNAL}: `python select_evaluation_256.py` was interrupted" in refused.stderr
        assert "mixed set" in refused.stderr and f"run `{REPRODUCE}`" in refused.stderr
        assert "Traceback" not in refused.stderr
    assert (data_dir / SELECTION_FILE).read_bytes() == STALE

    left = leftovers(data_dir)
    assert sorted(p.name for p in clear_interrupted_writes([data_dir])) == left
    assert run_selector(data_dir).returncode == 0
    for name in OUTPUTS:
        assert (data_dir / name).read_bytes() == (DATA_DIR / name).read_bytes(), name
    assert leftovers(data_dir) == []


def test_an_interrupt_between_renames_leaves_the_journal_and_no_temporary(tmp_path, monkeypatch, capsys):
    files = {tmp_path / "a.jsonl": b"new a\n", tmp_path / "b.json": b"new b\n"}
    rename = os.replace

    def interrupted(source, target):
        if str(target).endswith("b.json"):
            raise KeyboardInterrupt
        rename(source, target)

    monkeypatch.setattr(artifacts.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        publish(files, check=False, command="make ab")
    monkeypatch.undo()
    assert leftovers(tmp_path) == [JOURNAL]
    capsys.readouterr()
    assert not publish(files, check=True, command="make ab")
    assert "`make ab` was interrupted while replacing" in capsys.readouterr().err


def test_a_failure_while_writing_temporaries_leaves_the_old_set_and_nothing_else(tmp_path, monkeypatch):
    old = {tmp_path / "a.jsonl": b"old a\n", tmp_path / "b.json": b"old b\n"}
    for path, data in old.items():
        path.write_bytes(data)
    write_temp = artifacts.write_temp

    def disk_full(path, data):
        if path.name == "b.json":
            raise OSError(28, "No space left on device")
        return write_temp(path, data)

    monkeypatch.setattr(artifacts, "write_temp", disk_full)
    with pytest.raises(OSError):
        publish({path: b"new\n" for path in old}, check=False, command="make ab")
    assert {path: path.read_bytes() for path in old} == old
    assert leftovers(tmp_path) == []


def test_leftover_temporaries_alone_are_reported_too(tmp_path, capsys):
    (tmp_path / ".a.jsonl.x1y2.tmp").write_bytes(b"half")
    assert not publish({tmp_path / "a.jsonl": b"new\n"}, check=False, command="make a")
    err = capsys.readouterr().err
    assert ".a.jsonl.x1y2.tmp" in err and f"run `{REPRODUCE}`" in err
    assert not (tmp_path / "a.jsonl").exists()


def test_git_ignores_temporaries_and_journals_and_tracks_none():
    for name in ("fairness/.evaluation.jsonl.k2j3h4.tmp", f"fairness/{JOURNAL}", f"images/{JOURNAL}"):
        assert subprocess.run(["git", "check-ignore", "-q", name], cwd=REPO).returncode == 0, name
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert not [name for name in tracked.splitlines() if name.endswith(".tmp") or name.endswith(JOURNAL)]


# --- Unwritable outputs, found before any work -------------------------------------------------

COMMANDS = {
    "pools": (pools.main, TRAIN_FILE),
    "selector": (selector.main, VALIDATION_FILE),
    "summary": (summary.main, SUMMARY_FILE),
    "verify": (verify.main, VERIFICATION_FILE),
}


@pytest.fixture
def no_generating(monkeypatch):
    """Make generating a pool fail the test: the refusal must come before it."""
    def scan(*args, **kwargs):
        raise AssertionError("started generating before checking the outputs")
    monkeypatch.setattr(pools, "scan_pool", scan)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_given_as_data_dir_is_refused_in_one_line(tmp_path, capsys, no_generating, command):
    main, _ = COMMANDS[command]
    not_a_directory = tmp_path / "fairness.txt"
    not_a_directory.write_text("x")
    assert main(["--data-dir", str(not_a_directory)]) == 1
    err = one_line_error(capsys)
    assert err.startswith(f"error: {not_a_directory}: is a file, but it must be a directory")


@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_path_that_is_a_directory_is_refused_in_one_line(tmp_path, capsys, no_generating, command):
    main, output = COMMANDS[command]
    (tmp_path / output).mkdir()
    assert main(["--data-dir", str(tmp_path)]) == 1
    err = one_line_error(capsys)
    assert err.startswith(f"error: {tmp_path / output}: is a directory") and "move it away" in err


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory this process cannot create files in. Root writes through mode bits,
    so as root it is /sys, where the kernel refuses new files to everyone."""
    if os.geteuid() == 0:
        yield Path("/sys")
        return
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    read_only.chmod(0o555)
    yield read_only
    read_only.chmod(0o755)


def test_a_read_only_data_dir_is_refused_by_pools_before_generating(read_only_dir):
    done = subprocess.run([sys.executable, "-m", "sokoban_tools", "pools", "--data-dir", str(read_only_dir)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"error: {read_only_dir}: cannot be written (")
    assert "chmod u+w" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr and "boards from" not in done.stdout  # nothing generated
