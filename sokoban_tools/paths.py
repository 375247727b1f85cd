"""Path arguments checked before any work: read only regular files, with a bound; write only where a file can go.

A command given a FIFO must not hang, one given ``/dev/zero`` must not exhaust
memory, and one whose output cannot be written must say so before the work,
not with a traceback after it. So every file a command reads goes through
:func:`read_bounded` (the loading script's :func:`sokoban_published.open_regular_file`,
then at most a stated number of bytes) and every file it writes is first
checked with :func:`unwritable`. Both name the path in one line with the fix.
Standard library only.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from sokoban_published import NotRegularFileError, open_regular_file


class PathError(ValueError):
    """A path argument that cannot be read or written as the command needs."""


def read_bounded(path: Path | str, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file at ``path``, refused (:class:`PathError`)
    when it cannot be opened, is not a regular file or holds more than
    ``limit`` bytes; ``what`` names it in the message (``"episode log"``)."""
    try:
        fd, size = open_regular_file(path)
    except OSError as err:
        raise PathError(f"{path}: cannot be read ({err.strerror}); give the path of the {what}") from None
    except NotRegularFileError as err:
        raise PathError(f"{path}: {err}; give the path of the {what}, a regular file") from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(min(size, limit) + 1)  # one byte past the bound shows a file that grew
    if len(data) > limit:
        raise PathError(f"{path}: holds more than {limit:,} bytes, more than a {what} may; "
                        f"split it into several files")
    return data


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written as a file, with the fix; ``None`` if it can."""
    if path.is_dir():
        return f"{path}: is a directory, but the command writes a file there; move it away or give a file name"
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        return f"{path}: is not a regular file, so the command will not replace it; give another file name"
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing}: is a file, but it must be a directory; give a directory (e.g. --data-dir)"
    try:
        tempfile.TemporaryFile(dir=existing).close()  # a real write test: root ignores mode bits
    except OSError as err:
        return (f"{existing}: cannot be written ({err.strerror}); make it writable "
                f"(chmod u+w) or give another directory (e.g. --data-dir)")
    return None
