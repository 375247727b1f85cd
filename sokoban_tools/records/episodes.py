"""The per-board episode log: one JSON line per finished episode.

A fair comparison of training methods needs per-board results, not only a
mean, so the runtime reports every episode it plays as an
:class:`EpisodeRecord` and can append them to a JSONL log, which the scoring
commands read back. Rows are compact JSON objects with exactly the keys of
:data:`EPISODE_KEYS` (``moves`` may be missing from an older log's row), written in
that order and read in any order (a JSON object's keys are unordered, and another
trainer's writer will not keep ours):

=====================  ======  =====================================================
``method``             str     the training method, e.g. ``"GRPO"``
``run``                str     the run within the method, e.g. a training seed
``phase``              str     ``"validation"`` or ``"training"``
``update``             int     training update: for validation, the update at which
                               the pass ran (0 before training)
``task_id``            str     the stored board played
``won``                bool    the box reached the target within the horizon
``actions``            int     actions 1-4 taken (an unparseable answer, action 0,
                               spends a turn of the trainer but is not counted)
``return``             float   the sum of the episode's rewards
``evaluation_sha256``  str     validation rows: SHA-256 of the ``evaluation.jsonl``
                       | null  played, so a log of another board set is refused;
                               training rows: null
``moves``              str     every action the episode played, in order, one
                               letter each (:data:`MOVE_LETTERS`: ``U`` up, ``D``
                               down, ``L`` left, ``R`` right, ``0`` an unparseable
                               answer), e.g. ``"URRD0L"``; its letters other than
                               ``0`` number ``actions``. It lets anyone replay the
                               episode on its board (``score --verify``). Always
                               written; a row of an older log without it is read
                               with ``moves`` null and reported as unverified
=====================  ======  =====================================================

Every writer keeps an episode's outcome in an :class:`EpisodeTally` (the runtime
environment keeps one per episode, :attr:`sokoban_tools.runtime.env.FairSokobanEnv.tally`),
which makes its record, so every writer records the same fields the same way.

Appending writes whole lines in one call, so an interrupted writer leaves at
most a last line without its newline, which the reader refuses by line number.
An append reaches the kernel at once, so a writer killed (even by kill -9) loses none
of it; it reaches the disk (``fsync``) where a run must find it after the machine
itself fails: :meth:`EpisodeWriter.sync`, which the writers call where a run is made
durable (the end of each validation pass, before a checkpoint counts the log's records,
and when the writer closes), not after every record (about 80,000 a run of a million
env steps, some 3 ms each).
A process appends to a log through its one :class:`EpisodeWriter` (:func:`episode_writer`),
which every writer (the verl-agent hooks, ``evaluate``, ``vagen log``, Gymnasium) goes
through. It holds the log's lock for the run: an exclusive ``flock`` on ``.<log>.lock``
beside it, which the kernel drops when the process ends (even by kill -9), so a dead
writer never blocks the next (a writer that closes removes the file; a dead one's stays). A second process on the same log is refused
(:class:`LogInUse`, one line naming the log and the holder) before it writes anything.
The writer also writes or checks the run manifest beside the log once for all its users
(:meth:`EpisodeWriter.write_manifest`: the 272 environments of a training run read it at most
once), and adds costs to it without reading it again while the file is the one it last wrote or read.
Holding the lock, the writer knows that temporary files its log's writes leave
(``.<log>...tmp``: a side file's, a manifest's, a training checkpoint's) are a dead writer's,
and removes them, saying so in one line.

Records are never deleted: records a resumed or restarted run will write again,
and a torn last line, are moved out of the log by :func:`set_aside` into a side
file beside it, ``<log>.aside-<k>.<reason>.jsonl`` (:func:`side_files` lists them),
holding the moved lines unchanged (a torn line given its newline).
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import math
import os
import re
import socket
import stat
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from ..checks import problem
from ..files import json_document, temporary_target, write_atomic
from ..paths import read_bounded, unwritable
from . import strict_json
from .manifest import check_manifest, keep_manifest, manifest_path, merge_costs, read_manifest, same_run
from .rows import DataError

EPISODE_KEYS = ("method", "run", "phase", "update", "task_id", "won", "actions", "return", "evaluation_sha256",
                "moves")
OPTIONAL_KEYS = ("moves",)  # absent from logs written before it existed: read as null (unverified)
MOVE_LETTERS = "0UDLR"  # action a (0 none, 1 up, 2 down, 3 left, 4 right) is written MOVE_LETTERS[a]
_MOVES = re.compile(f"[{MOVE_LETTERS}]*")
PHASES = ("validation", "training")
MAX_LOG_BYTES = 1 << 30  # about five million episodes; a reader refuses a larger file (split it)
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished episode; fields as in the module table (``episode_return`` is ``return``)."""

    method: str
    run: str
    phase: str
    update: int
    task_id: str
    won: bool
    actions: int
    episode_return: float
    evaluation_sha256: str | None
    moves: str | None = None  # None only in a row of an older log (unverified)

    def __post_init__(self):
        problem = _problem(self.as_dict())
        if problem:
            raise ValueError(problem)

    def as_dict(self) -> dict:
        """The row as written, keys in :data:`EPISODE_KEYS` order (``moves`` left out when
        null: an older log's row is written back as it was)."""
        values = (self.method, self.run, self.phase, self.update, self.task_id, self.won,
                  self.actions, self.episode_return, self.evaluation_sha256, self.moves)
        return {key: value for key, value in zip(EPISODE_KEYS, values)
                if value is not None or key not in OPTIONAL_KEYS}

    @property
    def verifiable(self) -> bool:
        """The record holds its moves, so a replay can check it."""
        return self.moves is not None

    def to_line(self) -> str:
        """The canonical JSON line, without its newline."""
        return json.dumps(self.as_dict(), separators=(",", ":"), ensure_ascii=False)


def moves_of(actions) -> str:
    """The ``moves`` of a sequence of actions 0-4."""
    return "".join(map(MOVE_LETTERS.__getitem__, map(int, actions)))  # a batched writer makes ~100k a run


def actions_of(moves: str) -> list[int]:
    """The actions 0-4 a ``moves`` string holds."""
    return [MOVE_LETTERS.index(letter) for letter in moves]


@dataclass
class EpisodeTally:
    """An episode's outcome while it is played: the one bookkeeping every writer keeps,
    so every record holds its moves, action count, return and outcome alike.

    :meth:`add` takes each action with the reward, ``done`` and ``won`` the environment
    returned; the first ``done`` ends the tally and later steps are ignored, as verl-agent
    masks an environment that is done. A writer that stops earlier (a turn limit reached
    with unparseable answers, which count no step) simply stops adding.
    """

    played: list[int] = field(default_factory=list)
    total: float = 0.0
    won: bool = False
    done: bool = False

    def add(self, action: int, reward: float, done: bool, won: bool) -> None:
        if self.done:
            return
        self.played.append(int(action))
        self.total += reward
        if done:
            self.done, self.won = True, bool(won)

    @property
    def actions(self) -> int:
        """Actions 1-4 played (an unparseable answer, 0, is not counted)."""
        return len(self.played) - self.played.count(0)

    @property
    def moves(self) -> str:
        return moves_of(self.played)

    def record(self, method: str, run: str, phase: str, update: int, task_id: str,
               evaluation_sha256: str | None) -> "EpisodeRecord":
        """The episode's record, labelled with the writer's method, run, phase and update."""
        return EpisodeRecord(method, run, phase, update, task_id, self.won, self.actions, self.total,
                             evaluation_sha256, self.moves)


def _problem(row: dict) -> str | None:
    """What is wrong with a decoded row, or ``None``."""
    missing = [key for key in EPISODE_KEYS if key not in row and key not in OPTIONAL_KEYS]
    unknown = [key for key in row if key not in EPISODE_KEYS]
    if missing or unknown:
        return (f"keys are {list(row)}, expected {list(EPISODE_KEYS)} in any order "
                f"(missing {missing}, unknown {unknown})")
    for key in ("method", "run", "task_id"):
        if not isinstance(row[key], str) or not row[key]:
            return f"{key} must be a non-empty string, got {row[key]!r}"
    if row["phase"] not in PHASES:
        return f"phase must be one of {', '.join(PHASES)}, got {row['phase']!r}"
    for key in ("update", "actions"):
        if problem(key, row[key]):
            return problem(key, row[key])
    if not isinstance(row["won"], bool):
        return f"won must be true or false, got {row['won']!r}"
    value = row["return"]
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return f"return must be a finite number, got {value!r}"
    digest = row["evaluation_sha256"]
    if row["phase"] == "validation":
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            return f"evaluation_sha256 of a validation row must be 64 lower-case hex digits, got {digest!r}"
    elif digest is not None:
        return f"evaluation_sha256 of a training row must be null, got {digest!r}"
    moves = row.get("moves")
    if moves is not None:
        if not isinstance(moves, str) or not _MOVES.fullmatch(moves):
            return f"moves must be a string of the letters {MOVE_LETTERS} (one per action played), got {moves!r}"
        counted = len(moves) - moves.count("0")
        if counted != row["actions"]:
            return (f"moves {moves!r} hold {counted} actions 1-4 but actions is {row['actions']}: "
                    f"the record contradicts itself")
    return None


def _append(path: Path, records: Iterable[EpisodeRecord]) -> int:
    """Append ``records`` to the log at ``path`` (created if missing) in one
    write; returns how many were written. Only :class:`EpisodeWriter` calls it."""
    lines = "".join(record.to_line() + "\n" for record in records)
    if not lines:
        return 0
    try:  # non-blocking: opening a FIFO for writing would wait for a reader forever
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666)
    except OSError as err:
        raise OSError(err.errno, f"the episode log {path} cannot be opened for appending: {err.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"the episode log {path} is not a regular file (a FIFO, socket or device); "
                             f"give a file")
        _write_all(fd, lines.encode("utf-8"), path)
    finally:
        os.close(fd)
    return lines.count("\n")


def _sync(path: Path) -> None:
    """``fsync`` the log at ``path``: its appended bytes on disk."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:  # moved away since: nothing of it to keep
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes, path) -> None:
    """Every byte of ``data``, or an ``OSError`` saying how much reached the log: ``os.write``
    may write part of it (a full disk, a file size limit) and say so only by its count."""
    written = 0
    while written < len(data):
        try:
            count = os.write(fd, data[written:])
        except OSError as err:
            count, reason = 0, err.strerror
        else:
            reason = "nothing more could be written"
        if not count:
            raise OSError(f"the episode log {path}: only {written:,} of {len(data):,} bytes were written "
                          f"({reason}); free space (or raise the file size limit) and start the run again: "
                          f"its torn last line is then set aside, not kept")
        written += count


class LogInUse(OSError):
    """Another process holds the lock of an episode log this process would write."""


def lock_path(log: Path | str) -> Path:
    """Where the lock of the episode log ``log`` lives: ``.<log>.lock`` beside it."""
    log = Path(log)
    return log.with_name(f".{log.name}.lock")


def _temporaries(log: Path) -> list[Path]:
    """The temporary files the writes of ``log`` make beside it (:func:`sokoban_tools.files.write_temp`
    of the log itself, its manifest, its side files and their manifests, and ``train``'s checkpoint
    ``<log>.checkpoint``), left there by a writer that died before renaming them."""
    family = re.compile(re.escape(log.name) +
                        r"(\.manifest\.json|\.aside-\d+\.[a-z0-9-]+\.(jsonl|manifest\.json)|\.checkpoint)?")
    if not log.parent.is_dir():
        return []
    return sorted(path for path in log.parent.iterdir()
                  if family.fullmatch(temporary_target(path.name) or "") and path.is_file())


def _take_lock(log: Path) -> int:
    """The descriptor holding the exclusive lock of ``log`` (see the module docstring);
    :class:`LogInUse` naming the holder when another process has it."""
    problem = unwritable(log)
    if problem:
        raise ValueError(f"the episode log {problem}")
    log.parent.mkdir(parents=True, exist_ok=True)
    path = lock_path(log)
    while True:
        if path.is_dir():  # an open for writing would fail as "Is a directory", naming no fix
            raise ValueError(f"the lock {path} of the episode log {log} is a directory, not a lock file; move it "
                             f"away (a run makes a new lock)")
        try:  # non-blocking: a FIFO in the lock's place must not hang the open
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, 0o666)
        except OSError as err:
            raise OSError(err.errno, f"the lock {path} of the episode log {log} cannot be opened ({err.strerror}); "
                                     f"make its folder writable, or remove it if no run writes the log") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"the lock {path} of the episode log {log} is not a regular file; remove it "
                          f"(a run makes a new one)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "a process that has not said which"
            os.close(fd)
            raise LogInUse(f"the episode log {log} is being written by another process ({holder}); let it "
                           f"finish (or stop it), or give this run another log") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # its holder removed the lock file as we took it: take the new one
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    os.ftruncate(fd, 0)  # who holds it, for the refusal of the next: never the command line (a URL may hold a password)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {started}\n".encode("utf-8"), 0)
    return fd


def log_holder(log: Path | str) -> str | None:
    """Who writes the log at ``log`` now, as its lock file says (pid, host, start), when that
    process is alive on this host; ``None`` otherwise. Reads only: a reader never takes the
    lock, so a writer starting at the same moment is never refused because of it."""
    try:
        text = lock_path(log).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    match = re.fullmatch(r"pid (\d+) on (\S+), since .*", text)
    if match is None or match.group(2) != socket.gethostname():
        return None
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return None  # its writer died: the kernel dropped the lock, the file stays
    except PermissionError:
        pass  # alive, another user's
    return text


def _identity(path: Path) -> tuple | None:
    """What tells a file from its replacement without reading it: device, inode, size and time
    (an atomic write renames a new file into place); ``None`` when there is none."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


class EpisodeWriter:
    """The one writer of an episode log in this process (:func:`episode_writer`): it holds
    the log's lock (see the module docstring), and every append and every :func:`set_aside`
    of the log goes through it, so no two writers interleave their writes or keep their own
    view of the file. Close it (or use it in a ``with`` block) when the run is done."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = _take_lock(path)
        self._users = 0
        self._unsynced = False  # records appended since the last sync
        self._manifest: dict | None = None  # the manifest beside the log, as this writer wrote or read it
        self._manifest_path: Path | None = None  # where, as its user named the log
        self._manifest_identity: tuple | None = None  # and its file's identity then
        leftovers = _temporaries(path)
        for leftover in leftovers:
            leftover.unlink()
        if leftovers:
            print(f"sokoban-fairness: removed {', '.join(p.name for p in leftovers)} beside {path}, temporary "
                  f"files a writer of this log left when it died", file=sys.stderr, flush=True)

    def append(self, records: Iterable[EpisodeRecord]) -> int:
        """Append ``records`` in one write (whole lines; on disk at the next :meth:`sync`)."""
        self._check_open()
        written = _append(self.path, records)
        self._unsynced = self._unsynced or written > 0
        return written

    def sync(self) -> None:
        """Put every record appended so far on disk (``fsync``), if any is not yet: where a run
        must survive the machine failing (a pass's end, a checkpoint, the end)."""
        self._check_open()
        if self._unsynced:
            _sync(self.path)
            self._unsynced = False

    def set_aside(self, reason: str, keep=lambda record: False) -> "SetAside | None":
        """:func:`set_aside` on this log."""
        self._check_open()
        return _set_aside(self.path, reason, keep)

    def write_manifest(self, manifest: dict, log: Path | str) -> dict:
        """Write or check the run manifest beside the log (:func:`~.manifest.keep_manifest`; ``log``:
        the log as its user named it, for the messages) once for all users of this writer; the
        manifest now beside the log. Holding the lock, the writer knows the file is still the one
        it wrote or read while its identity (:func:`_identity`) is: so each environment of a vector
        stating the same run reads nothing again."""
        self._check_open()
        check_manifest(manifest, "the new manifest")
        known = self._known_manifest()
        if known is None or not same_run(known, manifest):
            self._manifest_path = manifest_path(log)
            self._remember(keep_manifest(log, manifest))
        return copy.deepcopy(self._manifest)

    @property
    def manifest(self) -> dict:
        """The manifest beside the log (a copy), read only if it changed since this writer wrote or read it."""
        self._check_open()
        known = self._known_manifest()
        if known is None:
            if self._manifest_path is None:
                raise RuntimeError(f"the writer of {self.path} has no manifest yet; write_manifest first")
            self._remember(read_manifest(self._manifest_path))
        return copy.deepcopy(self._manifest)

    def rewrite_manifest(self, manifest: dict) -> None:
        """Write ``manifest``, the run's (same method and settings) with other notes or costs, over
        the one beside the log."""
        if not same_run(self.manifest, manifest):
            raise ValueError(f"{self._manifest_path}: the writer of {self.path} rewrites only the manifest of "
                             f"its run, of the same method and settings")
        check_manifest(manifest, str(self._manifest_path))
        write_atomic(self._manifest_path, json_document(manifest))
        self._remember(manifest)

    def add_costs(self, entries) -> dict:
        """:func:`~.manifest.add_costs` on the manifest beside the log, read only if it changed since
        this writer wrote or read it; the manifest written."""
        manifest = merge_costs(self.manifest, entries, str(self._manifest_path))
        self.rewrite_manifest(manifest)
        return copy.deepcopy(manifest)

    def _remember(self, manifest: dict) -> None:
        """Keep (a copy of) ``manifest``, now beside the log, with the file's identity."""
        self._manifest, self._manifest_identity = copy.deepcopy(manifest), _identity(self._manifest_path)

    def _known_manifest(self) -> dict | None:
        """The manifest this writer wrote or read, if the file beside the log is still that one
        (another writer of this process, such as a user's :func:`~.manifest.add_costs`, replaces it)."""
        if self._manifest is None or _identity(self._manifest_path) != self._manifest_identity:
            return None
        return self._manifest

    def _check_open(self) -> None:
        if self._fd is None:
            raise RuntimeError(f"the writer of {self.path} is closed; take another with episode_writer()")

    def close(self) -> None:
        """Done with the log: once every user of the process's writer has closed it, the lock goes."""
        if self._fd is None:
            return
        self._users -= 1
        if self._users <= 0:
            self.sync()
            _WRITERS.pop(self.path, None)
            lock_path(self.path).unlink(missing_ok=True)  # still held: the next writer makes a new one
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> "EpisodeWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_WRITERS: dict[Path, EpisodeWriter] = {}


def episode_writer(path: Path | str) -> EpisodeWriter:
    """The process's one writer of the log at ``path`` (made, and the log's lock taken, on first
    use; each call is a user, who closes it when done); :class:`LogInUse` if another process
    writes the log, a ``ValueError`` if ``path`` is no place for a log (a directory, a FIFO)."""
    key = Path(os.path.abspath(path))
    if key not in _WRITERS:
        _WRITERS[key] = EpisodeWriter(key)
    writer = _WRITERS[key]
    writer._users += 1
    return writer


def writing(path: Path | str) -> bool:
    """Whether this process holds a writer of the log at ``path`` (an :func:`episode_writer` not
    yet closed by every user): how an environment of a vector sees that an earlier one opened the log."""
    return Path(os.path.abspath(path)) in _WRITERS


ASIDE = ".aside-"  # <log>.aside-<k>.<reason>.jsonl
_ASIDE_NAME = re.compile(r"\.aside-(\d+)\.([a-z0-9-]+)\.jsonl")


@dataclass(frozen=True)
class SetAside:
    """Lines moved out of a log: the side file, why, how many records, and a torn line or not."""

    path: Path
    reason: str
    records: int
    torn: bool

    def notice(self, log: Path | str) -> str:
        """The one-line notice a run prints when it sets lines aside."""
        torn = " and a torn last line (an interrupted write)" if self.torn else ""
        return (f"sokoban-fairness: {self.reason}: moved {self.records} record(s){torn} out of {log} "
                f"into {self.path.name} beside it (kept, not deleted)")


def side_files(path: Path | str) -> list[tuple[Path, int, str]]:
    """The side files of the log at ``path``: (file, number, reason), in the order they were made."""
    path = Path(path)
    found = []
    if path.parent.is_dir():
        for candidate in path.parent.iterdir():
            match = _ASIDE_NAME.fullmatch(candidate.name[len(path.name):]) \
                if candidate.name.startswith(path.name + ASIDE) else None
            if match:
                found.append((candidate, int(match.group(1)), match.group(2)))
    return sorted(found, key=lambda item: item[1])


def next_aside_number(path: Path | str) -> int:
    """The number of the next side file of the log at ``path`` (a set-aside manifest included)."""
    path = Path(path)
    pattern = re.compile(re.escape(path.name + ASIDE) + r"(\d+)\.")
    numbers = [int(match.group(1)) for candidate in (path.parent.iterdir() if path.parent.is_dir() else ())
               for match in [pattern.match(candidate.name)] if match]
    return max(numbers, default=0) + 1


def _checked_row(line: str, where: str, fix: str) -> EpisodeRecord:
    """The record of one complete log line; a :class:`DataError` naming ``where`` otherwise."""
    try:
        row = strict_json.loads(line)
    except ValueError as err:
        raise DataError(f"{where}: not a JSON object ({err}); {fix}") from None
    problem = _problem(row) if isinstance(row, dict) else "not a JSON object"
    if problem:
        raise DataError(f"{where}: {problem}; {fix}")
    values = [row.get(key) for key in EPISODE_KEYS]
    values[EPISODE_KEYS.index("return")] = float(row["return"])
    return EpisodeRecord(*values)


def _set_aside(path: Path | str, reason: str, keep=lambda record: False) -> SetAside | None:
    """Move every record of the log at ``path`` that ``keep`` rejects, and a torn last
    line (no newline), into a new side file ``<log>.aside-<k>.<reason>.jsonl``; ``None``
    when nothing moves. The side file is written (atomically) before the log is
    replaced (atomically) by its kept lines, so a crash between the two leaves every
    line in the log, to be set aside again: a line may be in two side files, never lost.
    A bad complete line is refused (:class:`DataError`) before anything is written."""
    path = Path(path)
    if not re.fullmatch(r"[a-z0-9-]+", reason):
        raise ValueError(f"reason must be lower-case words joined by '-', got {reason!r}")
    if not path.exists():
        return None
    fix = "repair or remove that line, or move the log away and start the run again"
    try:
        text = read_bounded(path, MAX_LOG_BYTES, "episode log").decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: cannot be read as UTF-8 text ({err}); {fix}") from None
    lines = text.split("\n")
    torn = lines.pop()  # "" when the log ends with its newline
    kept, moved = [], []
    for number, line in enumerate(lines, start=1):
        (kept if keep(_checked_row(line, f"{path}:{number}", fix)) else moved).append(line)
    if not moved and not torn:
        return None
    side = path.with_name(f"{path.name}{ASIDE}{next_aside_number(path)}.{reason}.jsonl")
    write_atomic(side, "".join(line + "\n" for line in moved + ([torn] if torn else [])).encode("utf-8"))
    write_atomic(path, "".join(line + "\n" for line in kept).encode("utf-8"))
    return SetAside(side, reason, len(moved), bool(torn))


def iter_episodes(path: Path | str, fix: str) -> Iterator[EpisodeRecord]:
    """The rows of the log at ``path``, checked one line at a time as :func:`read_episodes`
    checks them, keeping none: for a reader of a long run's whole log (a checkpoint counting
    it). ``fix`` ends the message of a bad line."""
    path = Path(path)
    with open(path, "rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.endswith(b"\n"):
                raise DataError(f"{path}:{number}: the last line has no newline (an interrupted write); {fix}")
            try:
                line = raw[:-1].decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataError(f"{path}:{number}: cannot be read as UTF-8 text ({err}); {fix}") from None
            yield _checked_row(line, f"{path}:{number}", fix)


READ_LOGS_KEPT = 256  # logs whose checked rows a process keeps: a report reads each committed run's log many times
KEPT_LOG_BYTES = 4 << 20  # and only logs this small (a published run's); a trainer's own log is read once
_read_logs: dict[bytes, tuple[EpisodeRecord, ...]] = {}  # by the digest of the log's bytes


def read_episodes(path: Path | str) -> list[EpisodeRecord]:
    """Every row of the log at ``path``, checked; a bad one raises a
    :class:`DataError` naming the file and line. The rows of bytes checked before in this process
    are not checked again: parsing, not reading, is what costs."""
    path = Path(path)
    fix = "repair or remove that line, or write the log again with the runtime"
    data = read_bounded(path, MAX_LOG_BYTES, "episode log")
    key = hashlib.blake2b(data, digest_size=16).digest() if len(data) <= KEPT_LOG_BYTES else None
    if key in _read_logs:
        return list(_read_logs[key])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: cannot be read as UTF-8 text ({err}); {fix}") from None
    if text and not text.endswith("\n"):
        raise DataError(f"{path}:{text.count(chr(10)) + 1}: the last line has no newline "
                        f"(an interrupted write); {fix}")
    rows = [_checked_row(line, f"{path}:{number}", fix) for number, line in enumerate(text.split("\n")[:-1], start=1)]
    if key is not None:
        if len(_read_logs) >= READ_LOGS_KEPT:
            del _read_logs[next(iter(_read_logs))]
        _read_logs[key] = tuple(rows)
    return rows
