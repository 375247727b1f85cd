"""Writing generated files safely and checking committed ones byte for byte.

Every command that produces a file under ``fairness/`` (or the card) goes
through :func:`publish`, which either writes its set of files so that a reader
sees the old set or the new one, or, with ``check``, compares them with what
is on disk and names the first differing line of each file that differs.

A set is written in three steps: every file to a temporary ``.NAME.*.tmp``
beside it; a journal (:data:`JOURNAL`) naming the set and its temporaries into
each directory it touches; then the renames, after which the journals go. A run
killed before the renames leaves only temporaries, one killed between them a
journal. The next write holds the folders' lock, so it knows such leftovers are a
dead writer's and recovers as a database does at start (:func:`recover`): a
journal is rolled forward (the renames it names are finished from its written
temporaries), temporaries without one (the old set is whole) are removed, and it
says so in one line. A ``--check``, and every reader, still refuses a folder
holding a journal, saying what to run: in the clone's folders :data:`REPRODUCE`,
which clears the leftovers (:func:`clear_interrupted_writes`) and rewrites every
file; in a ``--data-dir`` elsewhere, which reproduce never writes, the interrupted
command again (a journal that cannot be rolled forward, unreadable or naming
another folder's set, once its leftovers are removed).
Commands also call :func:`ready` before any work, so an unwritable output
is reported in one line before minutes of generating, not as a traceback after.

One run at a time per folder: a command holds the lock (:data:`LOCK`, an
``flock`` the kernel drops when the process dies, even by kill -9) of every
folder it writes, shared for ``--check``, from before it looks for leftovers
until it is done. A second run is refused in one line naming the lock and its
holder, rather than taking the first run's live journal for an interrupted
write. ``reproduce`` holds the locks for all its steps; the selector, which it
runs as a child process, works under its parent's lock.

Mixed sets: a reader that ignores journals can still see one if a run is
killed during the renames of one set (the temporaries are all written and
synced first, so that is a window of a few renames), and between two commands
that each write a set (e.g. new data files before the card pins them). The
writers of data files check the pinned release before writing (see
:mod:`sokoban_tools.pipeline.release`), so without ``--new-release`` such a
window only ever renames identical bytes.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import json
import os
import stat
import sys
from collections.abc import Iterator
from glob import escape as glob_escape
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sokoban_published import PUBLISH_JOURNAL

from ..files import json_document, sha256_bytes, sync_directory, temporary_target, write_atomic, write_temp  # noqa: F401 (json_document: for the pipeline's reports)
from ..help_text import Parser
from ..paths import unwritable
from ..layout import BASELINE_ENTRIES, DATA_FOLDER, DOCS_FOLDER, EXAMPLE_EPISODES, IMAGES_FOLDER, RESULTS_DIR, ROOT
from .release import FLAG, ReleaseError, check_rewrite

if TYPE_CHECKING:
    from concurrent.futures import Executor

JOURNAL = PUBLISH_JOURNAL  # every reader of the data files refuses a folder holding one
LOCK = ".publish-lock"  # held by the run writing (or checking) the files of its folder
TEMP_PATTERN = ".*.tmp"  # what write_atomic's temporaries look like; ignored by git
REPRODUCE = "python -m sokoban_tools reproduce"
# The clone's folders `reproduce` writes (and clears of interrupted writes' leftovers).
REPRODUCED_DIRECTORIES = tuple(path.resolve() for path in (ROOT, ROOT / DATA_FOLDER, ROOT / IMAGES_FOLDER,
                                                            ROOT / DOCS_FOLDER, EXAMPLE_EPISODES,
                                                            *(RESULTS_DIR / name for name in BASELINE_ENTRIES)))


def write_set(files: dict[Path, bytes], command: str) -> None:
    """Write ``files`` so that a reader sees the old set or the new one (see the
    module docstring); an exception removes every temporary it leaves."""
    directories = list(dict.fromkeys(path.parent for path in files))
    temps: dict[Path, str] = {}
    renamed = 0
    try:
        for path, data in files.items():
            temps[path] = write_temp(path, data)
        journal = json_document({"command": command, "files": [str(path) for path in files],
                                 "temporaries": {str(path): str(tmp) for path, tmp in temps.items()}})
        for directory in directories:
            write_atomic(directory / JOURNAL, journal)  # durable before any rename (write_atomic syncs)
        for path, tmp in temps.items():
            os.replace(tmp, path)
            renamed += 1
        for directory in directories:
            sync_directory(directory)
            (directory / JOURNAL).unlink()
    except BaseException:
        if renamed == 0:  # the old set is untouched: nothing to warn about later
            for tmp in temps.values():
                os.unlink(tmp)
            for directory in directories:
                (directory / JOURNAL).unlink(missing_ok=True)
        # else the journal and the temporaries left stay together: the next write rolls them forward
        raise


def _repair(directory: Path, leftovers: list[Path], command: str | None, recoverable: bool = False) -> str:
    """What to run after an interrupted write in ``directory``: ``reproduce`` for the
    clone's own folders, which it regenerates; elsewhere (``--data-dir``), which
    reproduce never touches, the command again, which finishes a ``recoverable`` write
    itself (:func:`recover`), else once the leftovers are removed."""
    if directory.resolve() in REPRODUCED_DIRECTORIES:
        return f"run `{REPRODUCE}` to regenerate every file"
    if recoverable:
        return (f"run `{command}` again on {directory} (without --check): it rolls the interrupted write forward "
                f"before it writes")
    again = f"`{command}` again on {directory}" if command else f"the command that writes {directory} again"
    return (f"remove {' '.join(str(path) for path in leftovers)} and run {again} "
            f"(`{REPRODUCE}` writes only the clone's files)")


def _own_temporary(path: Path, target: Path) -> bool:
    """Whether ``path`` is a temporary :func:`~sokoban_tools.files.write_temp` makes for ``target``."""
    return path.parent == target.parent and temporary_target(path.name) == target.name


def _roll_forward(journal: Path, held: set[Path]) -> str | None:
    """Finish the renames ``journal`` names from their temporaries, and remove the set's
    journals; what was done, or ``None`` when it cannot be rolled forward here (unreadable,
    of an older format, a temporary not of its file, or a folder this run does not hold)."""
    try:
        entry = json.loads(journal.read_bytes())
        command = entry["command"]
        temporaries = {Path(target): Path(temp) for target, temp in entry["temporaries"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    folders = {target.parent.resolve() for target in temporaries}
    if not temporaries or not folders <= held or not all(map(_own_temporary, temporaries.values(), temporaries)):
        return None
    renamed = [target for target, temp in temporaries.items() if temp.is_file() and not temp.is_symlink()]
    for target in renamed:
        os.replace(temporaries[target], target)
    for folder in folders:
        sync_directory(folder)
        (folder / JOURNAL).unlink(missing_ok=True)
    return (f"recovered {journal.parent}: `{command}` was killed between its renames; rolled its set forward "
            f"({len(renamed)} of {len(temporaries)} files renamed from their written temporaries) and removed its "
            f"journal")


def recover(paths) -> None:
    """Finish or clear what a dead writer left in the folders of ``paths``, which this run
    is about to write holding their exclusive lock (:func:`locked`): a journal is rolled forward
    (:func:`_roll_forward`), and the temporaries of these files that no journal names (a write
    killed before its renames: the old set is whole) are removed. One line on stderr each."""
    paths = [Path(p) for p in paths]
    held = {path.parent.resolve() for path in paths}
    for directory in dict.fromkeys(path.parent for path in paths):
        journal = directory / JOURNAL
        if journal.is_file() and not journal.is_symlink():
            done = _roll_forward(journal, held)
            if done is None:
                continue  # ready() reports it, with what to do
            print(done, file=sys.stderr)
        if journal.exists():
            continue
        dead = sorted(temp for path in paths if path.parent == directory
                      for temp in directory.glob(f".{glob_escape(path.name)}.*.tmp")
                      if _own_temporary(temp, path) and temp.is_file() and not temp.is_symlink())
        for temp in dead:
            temp.unlink()
        if dead:
            print(f"recovered {directory}: removed {', '.join(temp.name for temp in dead)}, left by a write killed "
                  f"before its renames (the files it was replacing are whole)", file=sys.stderr)


def interrupted_writes(directories) -> list[str]:
    """One message per directory holding a journal or temporaries of an
    interrupted write, saying what it left and what to run."""
    messages = []
    for directory in dict.fromkeys(Path(d) for d in directories):
        if not directory.is_dir():
            continue
        journal = directory / JOURNAL
        temps = sorted(directory.glob(TEMP_PATTERN))
        if journal.exists() and not journal.is_file():  # a FIFO would hang the read below
            kind = "a directory" if journal.is_dir() else "a special file (a FIFO or a device)"
            messages.append(f"{journal}: is {kind}, but a write keeps its journal there; move it away")
        elif journal.exists():
            command, recoverable = None, False
            try:
                entry = json.loads(journal.read_bytes())
                command = entry["command"]
                what = f"`{command}` was interrupted while replacing " + ", ".join(
                    os.path.relpath(name) for name in entry["files"])
                recoverable = isinstance(entry.get("temporaries"), dict) and bool(entry["temporaries"])
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                what = "an interrupted write left an unreadable journal"
            messages.append(f"{journal}: {what}, so these files are a mixed set of old and new; "
                            f"{_repair(directory, [journal, *temps], command, recoverable)}")
        elif temps:
            messages.append(f"{directory}: an interrupted write left {', '.join(p.name for p in temps)}; the "
                            f"files beside them may not belong together; {_repair(directory, temps, None)}")
    return messages


def clear_interrupted_writes(directories) -> list[Path]:
    """Remove the journals and temporaries of interrupted writes (before every file
    is regenerated); return what was removed. A folder in a leftover's place is
    an ``IsADirectoryError`` naming it, raised before anything is removed."""
    leftovers = [leftover for directory in dict.fromkeys(Path(d) for d in directories) if directory.is_dir()
                 for leftover in [directory / JOURNAL, *directory.glob(TEMP_PATTERN)]
                 if leftover.exists() or leftover.is_symlink()]
    for leftover in leftovers:
        if leftover.is_dir() and not leftover.is_symlink():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(leftover))
    for leftover in leftovers:
        leftover.unlink()
    return leftovers


class LockError(Exception):
    """Another run holds the lock of a folder this run would write or check, or the
    lock's place is taken by something that is not a file."""


_held: dict[Path, list[int]] = {}  # folder -> [lock file descriptor, nested holders in this process]


def _acquire(directory: Path, shared: bool) -> bool:
    """Take (or, held here already, enter again) ``directory``'s lock; whether the
    caller must release it. False when the parent process holds it and runs this
    one as its step, or when no lock file can be made there (no such folder yet, or
    not writable: :func:`ready` refuses a write there). :class:`LockError` when
    another run holds it."""
    if directory in _held:
        _held[directory][1] += 1
        return True
    path = directory / LOCK
    try:
        # non-blocking: a FIFO in the lock's place must not hang the open
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, 0o666)  # less the umask, as every file
    except OSError as err:
        if err.errno == errno.EISDIR:
            raise LockError(f"{path}: is a directory, but runs take the folder's lock there; move it away") from None
        if os.path.lexists(path):  # another user's lock, perhaps held: never run without it
            raise LockError(f"{path}: cannot be opened ({err.strerror}), so this run cannot tell whether another "
                            f"run holds it; run as the user who owns it, or remove it if no run is going on") from None
        return False  # no lock file can be made here: ready() refuses a write to this folder
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LockError(f"{path}: is not a regular file (it resolves to {os.path.realpath(path)}), but runs take "
                        f"the folder's lock there; remove it (a run makes a new one)")
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        if holder == str(os.getppid()):
            return False
        raise LockError(f"another run holds {path} (pid {holder or 'unknown'}); let it finish, "
                        f"then run this command again") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    _held[directory] = [fd, 1]
    return True


def _release(directory: Path) -> None:
    entry = _held[directory]
    entry[1] -= 1
    if not entry[1]:
        del _held[directory]
        os.close(entry[0])  # closing the descriptor drops the flock


@contextmanager
def locked(directories, shared: bool = False) -> Iterator[None]:
    """Hold the lock of every folder in ``directories`` (shared for checking,
    exclusive for writing) for the ``with`` block; :class:`LockError`, holding none,
    if another run holds one."""
    taken = []
    try:
        for directory in sorted(dict.fromkeys(Path(d).resolve() for d in directories)):
            if _acquire(directory, shared):
                taken.append(directory)
        yield
    finally:
        for directory in reversed(taken):
            _release(directory)


def not_a_file(path: Path) -> str | None:
    """Why ``path``, an output a command writes or compares, is something other than a
    regular file (which it may also not be yet), with the fix; ``None`` if it is not."""
    if path.is_dir():
        return f"{path}: is a directory, but the command writes a file there; move it away"
    if path.exists() and not path.is_file():
        return f"{path}: is a special file (a FIFO or a device), but the command writes a file there; move it away"
    return None


def ready(paths, check: bool) -> bool:
    """Whether a command may start: no interrupted write left a mixed set among the
    directories of ``paths``, and every path is a regular file (or none yet) and,
    unless ``check``, can be written. Says why not on stderr: each interrupted
    write, or the first unusable path. Writes nothing: a writer recovers a dead
    writer's leftovers first, under the folders' exclusive lock (:func:`recover`)."""
    paths = [Path(p) for p in paths]
    problems = interrupted_writes(path.parent for path in paths)
    if not problems:  # the first unusable path: the others usually share its cause
        problems = [problem for problem in map(not_a_file if check else unwritable, paths) if problem][:1]
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
                 workers: bool = False, data_files: bool = False) -> argparse.ArgumentParser:
    """The options every generating command shares: ``--check``, ``--data-dir``
    (default ``data_dir``) for commands that read and write ``fairness/``,
    ``--workers`` for commands that spread their work over processes, and
    ``--new-release`` for commands that write published data files (``data_files``)."""
    parser = Parser(prog=prog, description=description)
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--check", action="store_true",
                       help="regenerate in memory and fail, naming the first differing line, "
                            "if a committed file differs")
    if data_dir is not None:
        parser.add_argument("--data-dir", type=Path, default=data_dir,
                            help="folder of the published files (default: the repository's fairness/)")
    if workers:
        parser.add_argument("--workers", type=_workers, default=default_workers(),
                            help="processes to use (default: one per CPU); the output does not depend on it")
    if data_files:
        modes.add_argument(FLAG, action="store_true",
                           help="let published data files differ from the pinned release, as the new release "
                                "the card's Changelog names (the card step then pins it)")
    return parser


def publish(files: dict[Path, bytes], check: bool, command: str, new_release: bool = False) -> bool:
    """Write ``files`` as one set (``check`` false), or compare them with the files on disk.

    Returns whether everything matched, or was written, and says so on stdout. Another
    run holding a folder's lock, a mixed set left by an interrupted write, or (writing)
    a published data file changed without ``new_release`` is reported on stderr
    before anything is written; a mismatch with the file, the first differing line
    and what to run.
    """
    try:
        with locked({path.parent for path in files}, shared=check):
            if not check:
                recover(files)
            return _publish(files, check, command, new_release)
    except (LockError, ReleaseError) as err:
        print(f"error: {err}", file=sys.stderr)
        return False


def _publish(files: dict[Path, bytes], check: bool, command: str, new_release: bool) -> bool:
    if not ready(files, check):
        return False
    ok = True
    if not check:
        check_rewrite(files, new_release)
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


def run_command(command: str, check: bool, outputs, build, report=None, new_release: bool = False) -> int:
    """A generating command once its options are parsed, as an exit code.

    Holds the lock of the folders of ``outputs`` throughout (:func:`locked`) and
    stops in one line unless it may write them (:func:`ready`, before any work);
    ``build()`` returns the files, or, when there is a ``report``, the files and what it needs; they
    are published (``new_release`` lets published data files change), or compared
    with ``check``; then ``report(found)`` prints what the run found and returns
    whether it passed. A ``ValueError`` from ``build`` (a bad row, a refused
    pool: every data error of the package is one) is printed as one ``error:``
    line instead of a traceback.
    """
    try:
        with locked({Path(path).parent for path in outputs}, shared=check):
            if not check:
                recover([Path(path) for path in outputs])
            if not ready(outputs, check):
                return 1
            try:
                built = build()
            except ValueError as err:
                print(f"error: {err}", file=sys.stderr)
                return 1
            files, found = built if report is not None else (built, None)
            ok = publish(files, check, command, new_release)
            passed = report(found) if report is not None else True
            return 0 if ok and passed else 1
    except LockError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
