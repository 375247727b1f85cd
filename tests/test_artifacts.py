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
from sokoban_tools.pipeline import artifacts, baselines
from sokoban_tools.pipeline.generate import pools, tuning_selection
from sokoban_tools.pipeline.verification import summary, verify
from sokoban_tools.pipeline.artifacts import JOURNAL, REPRODUCE, clear_interrupted_writes, publish
from sokoban_tools.layout import (GENERATION_AUDIT_FILE, SELECTION_FILE, SOURCE_POOL_FILE, SUMMARY_FILE, TRAIN_FILE,
                                  TUNING_SELECTION_FILE, VALIDATION_FILE, VERIFICATION_FILE)

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


def kill_selector(data_dir: Path, module: str, function: str, path_argument: int) -> int:
    """The selector's exit code when SIGKILL (no cleanup runs) stops it in ``module.function``
    the moment that is called for its second file, the selection report (the call's argument
    ``path_argument`` names the file)."""
    program = textwrap.dedent(f"""
        import importlib, os, runpy, signal, sys
        module = importlib.import_module({module!r})
        called = getattr(module, {function!r})
        def dying(*arguments):
            if str(arguments[{path_argument}]).endswith({SELECTION_FILE!r}):
                os.kill(os.getpid(), signal.SIGKILL)
            return called(*arguments)
        setattr(module, {function!r}, dying)
        sys.argv = ["select_evaluation_256.py", "--data-dir", {str(data_dir)!r}]
        runpy.run_path({str(REPO / "select_evaluation_256.py")!r}, run_name="__main__")
    """)
    return subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, timeout=300).returncode


def test_a_kill_between_renames_is_reported_by_check_and_by_the_next_write(data_dir):
    # The selector, killed (SIGKILL: no cleanup runs) just before it renames its second file.
    assert kill_selector(data_dir, "os", "replace", 1) == -9  # replace(source, target)
    assert (data_dir / VALIDATION_FILE).read_bytes() == (DATA_DIR / VALIDATION_FILE).read_bytes()
    assert (data_dir / SELECTION_FILE).read_bytes() == STALE  # a mixed set on disk
    assert JOURNAL in leftovers(data_dir)

    # A check refuses (a reader never recovers), with advice for this folder: reproduce rewrites
    # only the clone's own, so here it is the same command again, which recovers by itself.
    refused = run_selector(data_dir, "--check")
    assert refused.returncode == 1
    assert f"{data_dir / JOURNAL}: `python select_evaluation_256.py` was interrupted" in refused.stderr
    assert "mixed set" in refused.stderr and "Traceback" not in refused.stderr
    assert f"run `python select_evaluation_256.py` again on {data_dir} (without --check): it rolls the " \
           f"interrupted write forward" in refused.stderr
    assert (data_dir / SELECTION_FILE).read_bytes() == STALE

    again = run_selector(data_dir)  # the same command, holding the lock: it rolls the journal forward
    assert again.returncode == 0, again.stderr
    (notice,) = [line for line in again.stderr.splitlines() if line.startswith("recovered ")]
    assert f"recovered {data_dir}: `python select_evaluation_256.py` was killed between its renames; rolled its " \
           f"set forward (" in notice
    for name in OUTPUTS:
        assert (data_dir / name).read_bytes() == (DATA_DIR / name).read_bytes(), name
    assert leftovers(data_dir) == []


def test_a_kill_while_writing_temporaries_leaves_them_to_the_next_write_which_removes_them(data_dir):
    assert kill_selector(data_dir, "sokoban_tools.pipeline.artifacts", "write_temp", 0) == -9
    dead = [name for name in leftovers(data_dir)]
    assert dead and JOURNAL not in dead  # temporaries only: the old set is whole
    again = run_selector(data_dir)
    assert again.returncode == 0, again.stderr
    (notice,) = [line for line in again.stderr.splitlines() if line.startswith("recovered ")]
    assert all(name in notice for name in dead) and "left by a write killed before its renames" in notice
    for name in OUTPUTS:
        assert (data_dir / name).read_bytes() == (DATA_DIR / name).read_bytes(), name
    assert leftovers(data_dir) == []


def test_an_interrupt_between_renames_leaves_the_journal_and_its_temporaries_which_the_next_write_rolls_forward(
        tmp_path, monkeypatch, capsys):
    old = {tmp_path / "a.jsonl": b"old a\n", tmp_path / "b.json": b"old b\n"}
    for path, data in old.items():
        path.write_bytes(data)
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
    assert [name for name in leftovers(tmp_path) if name != JOURNAL] == [name for name in leftovers(tmp_path)
                                                                          if name.startswith(".b.json.")]
    assert (tmp_path / "b.json").read_bytes() == b"old b\n"  # a mixed set, which the journal records
    capsys.readouterr()
    assert not publish(files, check=True, command="make ab")  # a check never recovers
    assert "`make ab` was interrupted while replacing" in capsys.readouterr().err
    artifacts.recover([tmp_path / "a.jsonl"])  # what a write of the folder does first: its set rolled forward
    assert "rolled its set forward (1 of 2 files renamed" in capsys.readouterr().err
    assert {path: path.read_bytes() for path in files} == files and leftovers(tmp_path) == []
    (tmp_path / JOURNAL).write_text('{"command": "make ab", "files": []}')  # no temporaries: not rolled forward
    assert not publish(files, check=False, command="make ab")
    assert "remove " in capsys.readouterr().err and (tmp_path / JOURNAL).exists()


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


def test_leftover_temporaries_are_reported_by_a_check_and_removed_by_the_write_they_belong_to(tmp_path, capsys):
    (tmp_path / ".a.jsonl.x1y2z3w4.tmp").write_bytes(b"half")
    assert not publish({tmp_path / "a.jsonl": b"new\n"}, check=True, command="make a")
    err = capsys.readouterr().err
    assert ".a.jsonl.x1y2z3w4.tmp" in err and f"remove {tmp_path / '.a.jsonl.x1y2z3w4.tmp'} and run" in err
    (tmp_path / ".other.json.x1y2z3w4.tmp").write_bytes(b"another command's")
    assert not publish({tmp_path / "a.jsonl": b"new\n"}, check=False, command="make a")
    err = capsys.readouterr().err  # its own removed, another file's reported, nothing written
    assert f"recovered {tmp_path}: removed .a.jsonl.x1y2z3w4.tmp" in err and ".other.json.x1y2z3w4.tmp" in err
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / ".a.jsonl.x1y2z3w4.tmp").exists()
    (tmp_path / ".other.json.x1y2z3w4.tmp").unlink()
    assert publish({tmp_path / "a.jsonl": b"new\n"}, check=False, command="make a")
    assert (tmp_path / "a.jsonl").read_bytes() == b"new\n"


def test_in_the_clones_own_folders_the_advice_is_reproduce_which_clears_the_leftovers(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "REPRODUCED_DIRECTORIES", (tmp_path.resolve(),))
    (tmp_path / JOURNAL).write_text('{"command": "make ab", "files": []}')
    (message,) = artifacts.interrupted_writes([tmp_path])
    assert message.endswith(f"run `{REPRODUCE}` to regenerate every file")
    assert clear_interrupted_writes([tmp_path]) == [tmp_path / JOURNAL] and leftovers(tmp_path) == []


def test_git_ignores_temporaries_and_journals_and_tracks_none():
    for name in ("fairness/.evaluation.jsonl.k2j3h4.tmp", f"fairness/{JOURNAL}", f"images/{JOURNAL}"):
        assert subprocess.run(["git", "check-ignore", "-q", name], cwd=REPO).returncode == 0, name
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert not [name for name in tracked.splitlines() if name.endswith(".tmp") or name.endswith(JOURNAL)]


# --- Unwritable outputs, found before any work -------------------------------------------------

COMMANDS = {
    "pools": (pools.main, TRAIN_FILE),
    "selector": (selector.main, VALIDATION_FILE),
    "tuning": (tuning_selection.main, TUNING_SELECTION_FILE),
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


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_check_against_an_output_that_is_no_regular_file_is_refused_in_one_line(tmp_path, capsys, no_generating,
                                                                                    command, kind):
    # e.g. `summary --check` with summary.json a directory: no traceback, no hang on a FIFO
    main, output = COMMANDS[command]
    os.mkfifo(tmp_path / output) if kind == "fifo" else (tmp_path / output).mkdir()
    assert main(["--check", "--data-dir", str(tmp_path)]) == 1
    err = one_line_error(capsys)
    expected = "is a directory" if kind == "directory" else "is a special file (a FIFO or a device)"
    assert err.startswith(f"error: {tmp_path / output}: {expected}") and "move it away" in err


def test_a_journal_or_temporary_that_is_a_directory_is_reported_in_one_line(tmp_path, capsys):
    (tmp_path / JOURNAL).mkdir()
    assert not publish({tmp_path / "a.json": b"new\n"}, check=True, command="make a")
    assert one_line_error(capsys).startswith(f"error: {tmp_path / JOURNAL}: is a directory")
    (tmp_path / JOURNAL).rmdir()
    os.mkfifo(tmp_path / JOURNAL)  # reading it would block for ever
    assert not publish({tmp_path / "a.json": b"new\n"}, check=False, command="make a")
    assert one_line_error(capsys).startswith(f"error: {tmp_path / JOURNAL}: is a special file")
    (tmp_path / JOURNAL).unlink()
    (tmp_path / ".a.json.x1.tmp").mkdir()
    with pytest.raises(IsADirectoryError, match=".a.json.x1.tmp"):  # reproduce reports it in one line
        clear_interrupted_writes([tmp_path])
    assert (tmp_path / ".a.json.x1.tmp").is_dir()


# --- One run at a time per folder ------------------------------------------------------------

HOLD = """
import subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from sokoban_tools.pipeline.artifacts import locked
with locked([sys.argv[2]], shared=sys.argv[3] == "shared"):
    print("held", flush=True)
    if sys.argv[4:]:  # a step the holder runs as its child
        sys.exit(subprocess.run(sys.argv[4:]).returncode)
    time.sleep(300)
"""


@pytest.fixture
def holder():
    """Start a process that holds a folder's lock (until the test ends), as a run would."""
    started = []

    def hold(directory: Path, shared: bool = False, *child: str) -> subprocess.Popen:
        process = subprocess.Popen([sys.executable, "-c", HOLD, str(REPO), str(directory),
                                    "shared" if shared else "exclusive", *child], stdout=subprocess.PIPE, text=True)
        started.append(process)
        assert process.stdout.readline() == "held\n"
        return process

    yield hold
    for process in started:
        process.kill()
        process.wait()


def lock_refusal(err: str, directory: Path, pid: int) -> None:
    assert err == (f"error: another run holds {directory.resolve() / artifacts.LOCK} (pid {pid}); "
                   f"let it finish, then run this command again\n"), err


@pytest.mark.parametrize("check", [False, True])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_second_run_on_a_folder_is_refused_naming_the_lock_and_its_holder_and_touches_nothing(
        data_dir, capsys, holder, no_generating, command, check):
    (data_dir / JOURNAL).write_text('{"command": "the first run", "files": []}')  # its live journal
    before = {p.name: p.read_bytes() for p in data_dir.iterdir() if p.name != artifacts.LOCK}
    first = holder(data_dir)
    main, _ = COMMANDS[command]
    assert main(["--data-dir", str(data_dir), *(["--check"] if check else [])]) == 1
    lock_refusal(capsys.readouterr().err, data_dir, first.pid)  # not "an interrupted write left ..."
    assert {p.name: p.read_bytes() for p in data_dir.iterdir() if p.name != artifacts.LOCK} == before


def test_the_example_and_a_direct_publish_take_the_lock_too(tmp_path, capsys, holder):
    from sokoban_tools.pipeline import example_policies

    first = holder(tmp_path)
    assert example_policies.main(["--out", str(tmp_path), "--runs", "1", "--updates", "0"]) == 1
    lock_refusal(capsys.readouterr().err, tmp_path, first.pid)
    assert not publish({tmp_path / "a.json": b"new\n"}, check=False, command="make a")
    lock_refusal(capsys.readouterr().err, tmp_path, first.pid)
    assert sorted(p.name for p in tmp_path.iterdir()) == [artifacts.LOCK]


def test_checks_share_the_lock_with_each_other_but_not_with_a_write(data_dir, holder):
    checking = holder(data_dir, True)
    check = run_selector(data_dir, "--check")  # runs: the stale outputs differ
    assert check.returncode == 1 and "differs from what the generator produces" in check.stderr
    assert "another run holds" not in check.stderr
    write = run_selector(data_dir)
    assert write.returncode == 1
    assert write.stderr.startswith(f"error: another run holds {data_dir.resolve() / artifacts.LOCK}")
    assert (data_dir / VALIDATION_FILE).read_bytes() == STALE


def test_the_lock_dies_with_its_holder_even_by_kill_9(data_dir, holder):
    first = holder(data_dir)
    first.kill()
    first.wait()
    assert run_selector(data_dir).returncode == 0
    assert (data_dir / VALIDATION_FILE).read_bytes() == (DATA_DIR / VALIDATION_FILE).read_bytes()


def test_a_step_runs_under_the_lock_of_the_run_that_started_it(data_dir, holder):
    # reproduce runs the selector as its child process while it holds the folder's lock
    parent = holder(data_dir, False, sys.executable, str(REPO / "select_evaluation_256.py"),
                    "--data-dir", str(data_dir))
    assert parent.wait(timeout=300) == 0
    assert (data_dir / VALIDATION_FILE).read_bytes() == (DATA_DIR / VALIDATION_FILE).read_bytes()


def test_two_selectors_started_at_once_never_see_each_others_journal(data_dir):
    for _ in range(3):
        runs = [subprocess.Popen([sys.executable, str(REPO / "select_evaluation_256.py"), "--data-dir",
                                  str(data_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
        results = [(run.wait(timeout=300), run.stderr.read()) for run in runs]
        for code, err in results:
            assert code == 0 or err.startswith("error: another run holds"), err
            assert "interrupted" not in err
        assert any(code == 0 for code, _ in results)
        assert leftovers(data_dir) == []
    for name in OUTPUTS:
        assert (data_dir / name).read_bytes() == (DATA_DIR / name).read_bytes()


def test_a_lock_path_that_is_a_directory_is_refused_in_one_line(data_dir, capsys):
    (data_dir / artifacts.LOCK).mkdir()
    assert selector.main(["--data-dir", str(data_dir)]) == 1
    assert one_line_error(capsys).startswith(f"error: {data_dir.resolve() / artifacts.LOCK}: is a directory")


def test_reproduce_is_refused_while_another_run_holds_a_folder_and_leaves_its_journal(tmp_path, monkeypatch,
                                                                                      capsys, holder):
    from sokoban_tools import __main__ as reproduce_command

    monkeypatch.setattr(artifacts, "REPRODUCED_DIRECTORIES", (tmp_path.resolve(),))
    monkeypatch.setattr(reproduce_command, "run", lambda *args: pytest.fail("a step ran"))
    (tmp_path / JOURNAL).write_text('{"command": "the first run", "files": []}')
    first = holder(tmp_path)
    for check in (False, True):
        assert reproduce_command.reproduce(check) == 1
        lock_refusal(capsys.readouterr().err, tmp_path, first.pid)
    assert (tmp_path / JOURNAL).exists()  # the other run's live journal is not "cleared"


@pytest.mark.parametrize("check", [False, True])
def test_reproduce_with_a_journal_that_is_a_directory_says_so_in_one_line(tmp_path, monkeypatch, capsys, check):
    from sokoban_tools import __main__ as reproduce_command

    monkeypatch.setattr(artifacts, "REPRODUCED_DIRECTORIES", (tmp_path.resolve(),))
    monkeypatch.setattr(reproduce_command, "run", lambda *args: pytest.fail("a step ran"))
    (tmp_path / JOURNAL).mkdir()
    assert reproduce_command.reproduce(check) == 1
    err = one_line_error(capsys)
    assert err.startswith(f"error: {tmp_path.resolve() / JOURNAL}: ") and "is a directory" in err.lower()
    assert "move it away" in err


# --- Inputs that are no regular file, found before any work ----------------------------------

READERS = {  # a command and an input it reads from --data-dir
    "summary": (summary.main, TRAIN_FILE),
    "verify": (verify.main, TRAIN_FILE),
    "baselines": (baselines.main, TRAIN_FILE),
    "selector pool": (selector.main, SOURCE_POOL_FILE),
    "selector audit": (selector.main, GENERATION_AUDIT_FILE),
    "tuning pool": (tuning_selection.main, TRAIN_FILE),
}


@pytest.mark.parametrize("kind", ["fifo", "directory", "/dev/zero"])
@pytest.mark.parametrize("reader", READERS)
def test_an_input_that_is_no_regular_file_is_refused_in_one_line_without_hanging(tmp_path, capsys, reader, kind):
    main, name = READERS[reader]
    for file in (TRAIN_FILE, VALIDATION_FILE, SOURCE_POOL_FILE, GENERATION_AUDIT_FILE):
        shutil.copyfile(DATA_DIR / file, tmp_path / file)
    target = tmp_path / name
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)  # reading it would block for ever
    elif kind == "directory":
        target.mkdir()
    else:
        target.symlink_to("/dev/zero")  # reading it would fill the memory
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["--data-dir", str(tmp_path), "--workers", "1"] if reader in ("verify", "baselines")
                else ["--data-dir", str(tmp_path)]) == 1
    err = one_line_error(capsys)
    expected = {"fifo": "a FIFO (named pipe)", "directory": "a directory", "/dev/zero": "a character device"}[kind]
    assert err.startswith(f"error: {target}: is not a regular file but {expected}"), err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != artifacts.LOCK) == before  # nothing written
