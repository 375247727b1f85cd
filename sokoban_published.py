"""What a published data file of sokoban-fairness must be, and what each of its rows must be.

The loading script, the runtime and scoring all read data files through
:func:`check_published_file`, which refuses any file whose size, SHA-256 or row
count differs from the pin in ``sokoban_pins.py``, and the loading script and the
package's row reader refuse a malformed row through :func:`row_problem`, so a
damaged file never reaches a trainer or a report, whichever door it comes in by.
Standard library only: it ships beside the loading script, which imports
nothing beyond the standard library, datasets and the files beside it.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import stat

# Imported as the loading script imports its neighbours: relatively inside the package
# datasets <= 3.6 makes of them, else as the top-level module beside this file.
_pins = importlib.import_module(".sokoban_pins" if __package__ else "sokoban_pins", __package__ or None)
RELEASE, PUBLISHED_FILES, HUB_REPO = _pins.RELEASE, _pins.PUBLISHED_FILES, _pins.HUB_REPO

# Where a writer of a set of data files names the set until all are renamed into place
# (sokoban_tools.pipeline.artifacts): present, the folder may hold old and new files at once.
PUBLISH_JOURNAL = ".publish-journal.json"


class ChecksumError(ValueError):
    """A data file that is not the published one: stale, truncated or tampered."""


class DataError(ValueError):
    """A data file, row or record that must not be used as it is, named with its line and the fix:
    one class for the loading script and for the package's readers."""


_CHUNK = 1 << 20  # bytes hashed at a time


def _download_again(name: str) -> str:
    return (
        f'Download the current file again, e.g. load_dataset(..., download_mode="force_redownload") '
        f"or `hf download {HUB_REPO} {name} --repo-type dataset --force-download`."
    )


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a special file"


class NotRegularFileError(ValueError):
    """A path to read that resolves to a directory, FIFO, device or socket."""


def open_regular_file(path) -> tuple[int, int]:
    """A read-only descriptor of ``path`` and its size in bytes, once what
    ``path`` resolves to is known to be a regular file.

    Opened without blocking, so that a FIFO returns at once; ``fstat`` then
    describes what was opened (through any symlink), so nothing can swap it in
    between. A reader that stops at the size returned (and at most a chunk
    past it) never hangs on a FIFO nor exhausts memory on ``/dev/zero``.
    Raises ``OSError`` when it cannot be opened and :class:`NotRegularFileError`
    saying what it is instead.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise NotRegularFileError(f"is not a regular file but {_file_kind(status.st_mode)} "
                                  f"(it resolves to {os.path.realpath(path)})")
    return fd, status.st_size


def check_published_file(path, name: str) -> bytes:
    """The bytes of ``path``, after checking them against the published size,
    SHA-256 and row count of the dataset file ``name`` (e.g. ``fairness/evaluation.jsonl``).

    What ``path`` resolves to must be a regular file of exactly the published
    size (:func:`open_regular_file`), checked before a byte is read, so a FIFO,
    a device or a huge file is refused at once instead of hanging or exhausting
    memory; then it is hashed in chunks.
    """
    if name not in PUBLISHED_FILES:
        raise ChecksumError(f"{name} is not a published file of sokoban-fairness")
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"the path of {name} must be a str or os.PathLike file path, not {path!r}")
    expected = PUBLISHED_FILES[name]
    journal = os.path.join(os.path.dirname(os.fspath(path)), PUBLISH_JOURNAL)
    if os.path.lexists(journal):
        raise ChecksumError(f"{name} ({path}) may be of a mixed set: {journal} shows a write of the folder's "
                            f"files that was interrupted (or is under way) between its renames. In a clone, run "
                            f"`python -m sokoban_tools reproduce` to regenerate them; else download the files again.")
    try:
        fd, size = open_regular_file(path)
    except OSError as err:
        raise ChecksumError(f"{name} ({path}) cannot be read ({err.strerror}). {_download_again(name)}") from None
    except NotRegularFileError as err:
        raise ChecksumError(f"{name} ({path}) {err}; the published file is a regular file of "
                            f"{expected['bytes']:,} bytes. {_download_again(name)}") from None
    if size != expected["bytes"]:
        os.close(fd)
        raise ChecksumError(f"{name} ({path}) is not the published file: expected {expected['bytes']:,} bytes "
                            f"(SHA-256 {expected['sha256']}), found {size:,} bytes. "
                            f"It is stale, truncated or modified. {_download_again(name)}")
    with os.fdopen(fd, "rb") as handle:
        digest, chunks, size = hashlib.sha256(), [], 0
        # At most one chunk past the published size, even if the file grew since fstat.
        while size <= expected["bytes"] and (chunk := handle.read(_CHUNK)):
            digest.update(chunk)
            chunks.append(chunk)
            size += len(chunk)
    data = b"".join(chunks)
    digest, rows = digest.hexdigest(), data.count(b"\n")
    if len(data) != expected["bytes"] or digest != expected["sha256"] or rows != expected["rows"]:
        raise ChecksumError(
            f"{name} ({path}) is not the published file: expected SHA-256 {expected['sha256']} "
            f"and {expected['rows']} rows, found SHA-256 {digest} and {rows} rows. "
            f"It is stale, truncated or modified. {_download_again(name)}"
        )
    return data


# ---------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------

ROW_KEYS = ("task_id", "seed", "room_fixed", "room_state", "xsb", "shortest_solution", "shortest_solution_length")
ROOM_SHAPE = (6, 6)  # (rows, columns) of every stored board
SEED_RANGE = (-(2**63), 2**63 - 1)  # int64, the seed column's type
# room_fixed codes (wall, floor, target) and room_state codes (those, box on target, box, player)
FIXED_CODES, STATE_CODES = {0, 1, 2}, {0, 1, 2, 3, 4, 5}
PIECES = (("player", {5}), ("box", {3, 4}))
# room_state code -> the room_fixed codes it may stand on
STANDS_ON = {0: {0}, 1: {1}, 2: {2}, 3: {2}, 4: {1}, 5: {1, 2}}
LURD = set("udlrUDLR")
_TYPES = (("task_id", str), ("seed", int), ("xsb", str), ("shortest_solution", str),
          ("shortest_solution_length", int))


def row_problem(row) -> str | None:
    """Why the decoded JSON line ``row`` is not a board row, or ``None``: its keys
    (all of :data:`ROW_KEYS`, in order), their types, a 6x6 board walled all round
    with valid codes, one player, one box and one target, and a solution in LURD
    notation as long as its stated length."""
    if not isinstance(row, dict):
        return "not a JSON object"
    if tuple(row) != ROW_KEYS:
        return f"keys are {list(row)}, expected {list(ROW_KEYS)} in that order"
    for key, kind in _TYPES:
        if not isinstance(row[key], kind) or isinstance(row[key], bool):
            return f"{key} is not a {kind.__name__}"
    low, high = SEED_RANGE
    if not low <= row["seed"] <= high:
        return f"seed {row['seed']} is outside int64 ({low}..{high})"
    for key, codes in (("room_fixed", FIXED_CODES), ("room_state", STATE_CODES)):
        grid = row[key]
        # type(v) is int: JSON gives int or bool (an int subclass), and a bool is refused
        if not (isinstance(grid, list) and all(type(r) is list for r in grid)
                and {type(v) for r in grid for v in r} <= {int}):
            return f"{key} is not a list of lists of integers"
        rows, columns = ROOM_SHAPE
        if len(grid) != rows or any(len(r) != columns for r in grid):
            return (f"{key} is {len(grid)} rows of {sorted({len(r) for r in grid})} cells, "
                    f"expected a {rows}x{columns} board")
        unknown = sorted({v for r in grid for v in r} - codes)
        if unknown:
            return f"{key} has codes {unknown}, expected some of {sorted(codes)}"
    fixed, state = row["room_fixed"], row["room_state"]
    border = [(r, c) for r in range(ROOM_SHAPE[0]) for c in range(ROOM_SHAPE[1])
              if (r in (0, ROOM_SHAPE[0] - 1) or c in (0, ROOM_SHAPE[1] - 1)) and fixed[r][c] != 0]
    if border:
        return f"room_fixed has non-wall border cells {border[:4]}, every border cell must be 0 (wall)"
    clash = next(((r, c) for r, (fr, sr) in enumerate(zip(fixed, state)) for c, (f, s) in enumerate(zip(fr, sr))
                  if f not in STANDS_ON[s]), None)
    if clash:
        r, c = clash
        return f"room_state[{r}][{c}] = {state[r][c]} disagrees with room_fixed[{r}][{c}] = {fixed[r][c]}"
    for name, codes in (*PIECES, ("target", {2})):
        grid = fixed if name == "target" else state
        found = sum(v in codes for r in grid for v in r)
        if found != 1:
            return f"{'room_fixed' if name == 'target' else 'room_state'} has {found} {name}s, expected one"
    solution = row["shortest_solution"]
    if set(solution) - LURD:
        return "shortest_solution is not in LURD notation (only u, d, l, r in either case)"
    if row["shortest_solution_length"] != len(solution):
        return (f"shortest_solution_length is {row['shortest_solution_length']}, "
                f"the solution has {len(solution)} actions")
    return None
