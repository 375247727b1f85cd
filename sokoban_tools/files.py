"""Writing a file so that a crash leaves the old one or the new one, never half of one.

What the product writes (an episode log's plot, a replay GIF) and what the
pipeline publishes both go through :func:`write_atomic`; the pipeline's
:mod:`sokoban_tools.pipeline.artifacts` adds sets of files and journals.
Standard library only, since the selector imports it through the pipeline.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_sha256(value) -> bool:
    """Whether ``value`` is a SHA-256 as the reports and pins write it: 64 lowercase hex digits."""
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


def sha256_file(path: Path | str) -> str:
    return sha256_bytes(Path(path).read_bytes())


def json_document(obj) -> bytes:
    """The bytes of a written JSON document: keys in insertion order, indented, one final newline."""
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


_TEMPORARY = re.compile(r"\.(?P<target>.+)\.[a-z0-9_]{8}\.tmp")  # write_temp's names: mkstemp's 8 characters


def temporary_target(name: str) -> str | None:
    """The name of the file a :func:`write_temp` temporary called ``name`` was for, or ``None``
    when ``name`` is not one: how a writer recognises a dead writer's leftovers."""
    match = _TEMPORARY.fullmatch(name)
    return match["target"] if match else None


def write_temp(path: Path, data: bytes) -> str:
    """Write ``data`` to a new temporary file beside ``path``; return its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes files private; published files are not
    except OSError as err:  # a full disk, a file size limit: name the file written, which a write's error does not
        os.unlink(tmp)
        raise OSError(err.errno, err.strerror, str(path)) from None
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def sync_directory(directory: Path) -> None:
    """Make the renames in ``directory`` durable, so a power cut keeps their order."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path | str, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place,
    so a crash leaves either the old file or the new one, never half of one."""
    path = Path(path)
    tmp = write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    sync_directory(path.parent)  # the rename itself survives a power cut
