"""A run's files opened once for every reader: its episode log, the manifest beside it and its side files.

``score``, ``compare`` and ``leaderboard`` each ask the manifest beside a log several
things (the boards' source, the action horizon and rewards of a replay, the schedule, the
method of the rows); each used to read it again. An :class:`OpenRun` reads it once, on
first use, and answers them all: the manifest, or the error its one read met, raised to
every reader that needs it, so each command refuses what it refused before, in the same words.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Iterable

from ..paths import PathError
from .episodes import side_files
from .manifest import manifest_path, parse_manifest, read_manifest_bytes
from .rows import DataError


class OpenRun:
    """The episode log ``log`` (as its user named it), its manifest read at most once, its side files."""

    def __init__(self, log: Path | str):
        self.log = Path(log)
        self.manifest_path = manifest_path(self.log)

    @cached_property
    def log_text(self) -> str:
        """The log's path as text, as messages name it: each of its rows' readers asks for it."""
        return str(self.log)

    @cached_property
    def _read(self) -> tuple[bool, bytes | None, dict | None, Exception | None]:
        """Whether a regular file is beside the log, and its bytes and manifest, or the error of reading them."""
        beside = self.manifest_path.is_file()
        try:
            data = read_manifest_bytes(self.manifest_path)
            return beside, data, parse_manifest(data, self.manifest_path), None
        except (DataError, PathError) as err:
            return beside, None, None, err

    def manifest(self) -> dict | None:
        """The manifest beside the log; ``None`` when no file is there; refused when it does not read."""
        beside, _, manifest, error = self._read
        if not beside:
            return None
        if error is not None:
            raise error
        return manifest

    def required_manifest(self) -> dict:
        """The manifest beside the log, refused (as a read of it is) when it is missing or does not read."""
        _, _, manifest, error = self._read
        if error is not None:
            raise error
        return manifest

    def readable_manifest(self) -> dict | None:
        """The manifest beside the log, or ``None`` when there is none or it is malformed (a
        :class:`DataError`; a file that cannot be read at all is refused): for a reader that
        only explains or checks where it can, leaving the refusal to the commands that need it."""
        beside, _, manifest, error = self._read
        if not beside or isinstance(error, DataError):
            return None
        if error is not None:
            raise error
        return manifest

    @property
    def manifest_bytes(self) -> bytes:
        """The manifest's bytes, as read (refused as :meth:`required_manifest` is)."""
        self.required_manifest()
        return self._read[1]

    @cached_property
    def side_files(self) -> list[tuple[Path, int, str]]:
        """The log's side files (:func:`~.episodes.side_files`)."""
        return side_files(self.log)


def open_runs(logs: Iterable[Path | str]) -> dict[Path, OpenRun]:
    """Each of the logs ``logs`` opened once (a log named twice is one run)."""
    return {Path(log): OpenRun(log) for log in dict.fromkeys(map(Path, logs))}
