"""Writing generated files safely and checking committed ones byte for byte.

Every command that produces a file under ``fairness/`` (or the card) goes
through :func:`publish`, which either writes all files atomically or, with
``check``, compares them with what is on disk and names the first differing
line of each file that differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path | str) -> str:
    return sha256_bytes(Path(path).read_bytes())


def json_document(obj) -> bytes:
    """The bytes of a generated JSON report: keys in insertion order, indented, one final newline."""
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_atomic(path: Path | str, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place,
    so a crash leaves either the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes files private; published files are not
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def first_difference(expected: bytes, actual: bytes) -> int:
    """The 1-based number of the first line where two texts differ."""
    for number, (a, b) in enumerate(zip(expected.split(b"\n"), actual.split(b"\n")), start=1):
        if a != b:
            return number
    return min(expected.count(b"\n"), actual.count(b"\n")) + 1


def default_workers() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


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
    """Write ``files`` (``check`` false), or compare them with the files on disk.

    Returns whether everything matched (always true when writing), and says so
    on stdout. A mismatch is reported on stderr with the file, the first
    differing line and the ``command`` that regenerates it.
    """
    ok = True
    for path, data in files.items():
        if not check:
            write_atomic(path, data)
            continue
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
