"""Writing generated files safely and checking committed ones byte for byte.

Every command that produces a file under ``fairness/`` (or the card) goes
through :func:`publish`, which either writes its set of files so that a reader
sees the old set or the new one, or, with ``check``, compares them with what
is on disk and names the first differing line of each file that differs.

A set is written in three steps: every file to a temporary ``.NAME.*.tmp``
beside it; a journal (:data:`JOURNAL`) naming the set into each directory
it touches; then the renames, after which the journals go. A run killed
before the renames leaves only temporaries, one killed between them a
journal: either way every later ``--check`` and write (:func:`ready`)
reports an interrupted write and says to run :data:`REPRODUCE`, which clears
the leftovers (:func:`clear_interrupted_writes`) and rewrites every file.
Commands also call :func:`ready` before any work, so an unwritable output
is reported in one line before minutes of generating, not as a traceback after.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import json_document, sha256_bytes, sync_directory, write_atomic, write_temp  # noqa: F401 (json_document: for the pipeline's reports)
from ..paths import unwritable

if TYPE_CHECKING:
    from concurrent.futures import Executor

JOURNAL = ".publish-journal.json"
TEMP_PATTERN = ".*.tmp"  # what write_atomic's temporaries look like; ignored by git
REPRODUCE = "python -m sokoban_tools reproduce"


def write_set(files: dict[Path, bytes], command: str) -> None:
    """Write ``files`` so that a reader sees the old set or the new one (see the
    module docstring); an exception removes every temporary it leaves."""
    directories = list(dict.fromkeys(path.parent for path in files))
    temps: dict[Path, str] = {}
    renamed = 0
    try:
        for path, data in files.items():
            temps[path] = write_temp(path, data)
        journal = json_document({"command": command, "files": [str(path) for path in files]})
        for directory in directories:
            write_atomic(directory / JOURNAL, journal)
            sync_directory(directory)
        for path, tmp in temps.items():
            os.replace(tmp, path)
            renamed += 1
        for directory in directories:
            sync_directory(directory)
            (directory / JOURNAL).unlink()
    except BaseException:
        for tmp in list(temps.values())[renamed:]:
            os.unlink(tmp)
        if renamed == 0:  # the old set is untouched: nothing to warn about later
            for directory in directories:
                (directory / JOURNAL).unlink(missing_ok=True)
        raise


def interrupted_writes(directories) -> list[str]:
    """One message per directory holding a journal or temporaries of an
    interrupted write, saying what it left and what to run."""
    messages = []
    for directory in dict.fromkeys(Path(d) for d in directories):
        if not directory.is_dir():
            continue
        journal = directory / JOURNAL
        temps = sorted(p.name for p in directory.glob(TEMP_PATTERN))
        if journal.exists():
            try:
                entry = json.loads(journal.read_bytes())
                what = f"`{entry['command']}` was interrupted while replacing " + ", ".join(
                    os.path.relpath(name) for name in entry["files"])
            except (OSError, ValueError, KeyError, TypeError):
                what = "an interrupted write left an unreadable journal"
            messages.append(f"{journal}: {what}, so these files are a mixed set of old and new; "
                            f"run `{REPRODUCE}` to regenerate every file")
        elif temps:
            messages.append(f"{directory}: an interrupted write left {', '.join(temps)}; the files "
                            f"beside them may not belong together; run `{REPRODUCE}` to regenerate every file")
    return messages


def clear_interrupted_writes(directories) -> list[Path]:
    """Remove the journals and temporaries of interrupted writes (before every file
    is regenerated); return what was removed."""
    removed = []
    for directory in dict.fromkeys(Path(d) for d in directories):
        if directory.is_dir():
            for leftover in [directory / JOURNAL, *directory.glob(TEMP_PATTERN)]:
                if leftover.exists():
                    leftover.unlink()
                    removed.append(leftover)
    return removed


def ready(paths, check: bool) -> bool:
    """Whether a command may start: no interrupted write left a mixed set among the
    directories of ``paths`` and, unless ``check``, every path can be written. Says
    why not on stderr: each interrupted write, or the first unwritable path."""
    paths = [Path(p) for p in paths]
    problems = interrupted_writes(path.parent for path in paths)
    if not check and not problems:  # the first unwritable path: the others usually share its cause
        problems = [problem for problem in map(unwritable, paths) if problem][:1]
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return not problems


def first_difference(expected: bytes, actual: bytes) -> int:
    """The 1-based number of the first line where two texts differ."""
    for number, (a, b) in enumerate(zip(expected.split(b"\n"), actual.split(b"\n")), start=1):
        if a != b:
            return number
    return min(expected.count(b"\n"), actual.count(b"\n")) + 1


def default_workers() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextmanager
def worker_processes(workers: int) -> Iterator[Executor | None]:
    """The processes of a command's ``--workers``, or ``None`` for 1 (the command then
    works in this process alone); on leaving, work not yet started is cancelled, so
    a failure or an interrupt does not wait for the rest of the queue."""
    if workers <= 1:
        yield None
        return
    from concurrent.futures import ProcessPoolExecutor  # only here: multiprocessing is slow to import

    executor = ProcessPoolExecutor(workers)
    try:
        yield executor
    finally:
        executor.shutdown(cancel_futures=True)


def _workers(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes, at least 1, not {text!r}")
    return int(text)


def command_line(prog: str, description: str, data_dir: Path | None = None,
                 workers: bool = False) -> argparse.ArgumentParser:
    """The options every generating command shares: ``--check``, ``--data-dir``
    (default ``data_dir``) for commands that read and write ``fairness/``, and
    ``--workers`` for commands that spread their work over processes."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--check", action="store_true",
                        help="regenerate in memory and fail, naming the first differing line, "
                             "if a committed file differs")
    if data_dir is not None:
        parser.add_argument("--data-dir", type=Path, default=data_dir,
                            help="folder of the published files (default: the repository's fairness/)")
    if workers:
        parser.add_argument("--workers", type=_workers, default=default_workers(),
                            help="processes to use (default: one per CPU); the output does not depend on it")
    return parser


def publish(files: dict[Path, bytes], check: bool, command: str) -> bool:
    """Write ``files`` as one set (``check`` false), or compare them with the files on disk.

    Returns whether everything matched, or was written, and says so on stdout. A mismatch, or a mixed set left by an interrupted write, is
    reported on stderr with the file, the first differing line and what to run.
    """
    if not ready(files, check):
        return False
    ok = True
    if not check:
        write_set(files, command)
    for path, data in files.items() if check else ():
        if not path.exists():
            print(f"{path}: missing; run `{command}` to create it", file=sys.stderr)
            ok = False
            continue
        on_disk = path.read_bytes()
        if on_disk != data:
            line = first_difference(data, on_disk)
            print(
                f"{path}:{line}: differs from what the generator produces "
                f"(sha256 {sha256_bytes(on_disk)[:12]}, expected {sha256_bytes(data)[:12]}); "
                f"run `{command}` to regenerate it",
                file=sys.stderr,
            )
            ok = False
    names = ", ".join(os.path.relpath(path) for path in files)
    print(f"checked {names}: {'identical' if ok else 'DIFFERENT'}" if check else f"wrote {names}")
    return ok


def run_command(command: str, check: bool, outputs, build, report=None) -> int:
    """A generating command once its options are parsed, as an exit code.

    Stops in one line unless it may write ``outputs`` (:func:`ready`, before any
    work); ``build()`` returns the files, or the files and what ``report`` needs;
    they are published, or compared with ``check``; then ``report(found)`` prints
    what the run found and returns whether it passed. A ``ValueError`` from
    ``build`` (a bad row, a refused pool: every data error of the package is one)
    is printed as one ``error:`` line instead of a traceback.
    """
    if not ready(outputs, check):
        return 1
    try:
        built = build()
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    files, found = built if isinstance(built, tuple) else (built, None)
    ok = publish(files, check, command)
    passed = report(found) if report is not None else True
    return 0 if ok and passed else 1
