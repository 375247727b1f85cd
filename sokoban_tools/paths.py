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

import errno
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


TEMPORARY_EXTRA = len(".") + len(".") + 8 + len(".tmp")  # write_temp's name: ".<name>.<8 characters>.tmp"


def unwritable(path: Path, option: str | None = None) -> str | None:
    """Why ``path`` cannot be written as a file, with the fix; ``None`` if it can. ``option``
    names how the user gave the path (``--log``, ``episode_log``), so the fix names what to
    change; without it the fix names no option, since the caller's may be none."""
    another = f"give {option} another path" if option else "give another path"
    try:
        return _unwritable(path, another)
    except OSError as err:  # a name too long for the file system, a loop of links
        return f"{path}: cannot be written ({err.strerror}); {another}"


def _unwritable(path: Path, another: str) -> str | None:
    if path.is_dir():
        return f"{path}: is a directory, but the command writes a file there; move it away or {another}"
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        return f"{path}: is not a regular file, so the command will not replace it; {another}"
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing}: is a file, but it must be a directory; move it away or {another}"
    longest = os.pathconf(existing, "PC_NAME_MAX") - TEMPORARY_EXTRA
    if len(os.fsencode(path.name)) > longest:  # the file is written as a temporary beside it, then renamed
        return (f"{path}: its name is {len(os.fsencode(path.name))} bytes long, and the folder takes names of at "
                f"most {longest} bytes for a file written there (the temporary file beside it is longer); "
                f"{another}, with a shorter name")
    try:
        tempfile.TemporaryFile(dir=existing).close()  # a real write test: root ignores mode bits
    except OSError as err:
        return f"{existing}: cannot be written ({err.strerror}); make it writable (chmod u+w) or {another}"
    return None


_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


def os_error_line(err: OSError, again: str = "run the same command") -> str:
    """An ``OSError`` a command met, as one line naming the path and the fix (``again``: what
    to do once fixed). An error raised with its own message (no path attribute) says both already."""
    if err.filename is None:
        return str(err)
    where = f"{err.filename} -> {err.filename2}" if err.filename2 else str(err.filename)
    if err.errno in _FULL:
        fix = f"free space (or raise the file size limit) and {again}"
    elif err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        fix = f"give it the permissions the command needs (or give another path) and {again}"
    else:
        fix = f"fix that and {again}"
    return f"{where}: {err.strerror}; {fix}"


def error_text(err: Exception) -> str:
    """The one line a command prints for ``err``: an ``OSError`` as :func:`os_error_line` gives it
    (with the path and the fix), any other error's own message."""
    return os_error_line(err) if isinstance(err, OSError) else str(err)
