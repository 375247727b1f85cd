"""VAGEN's own code run in this process, quiet by default: a progress bar, not a line per board.

Importing VAGEN's Sokoban prints gym's notices and its registry's warnings, and its
``run_eval`` prints its whole effective config (the 256 seeds one per line), a line per
rollout and a summary, and logs two INFO lines per job and one per HTTP request on the
root logger. Inside :func:`quietly` all of that goes to a text stream (the command keeps
it in a file beside VAGEN's dump, :func:`redacted`: the config holds the API key); what is
left on the terminal is a progress bar over VAGEN's pending jobs and the warnings and
errors of its evaluator (its ``view_suite`` loggers). ``verbose`` leaves everything as
VAGEN prints it.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from collections.abc import Iterator
from typing import TextIO

from tqdm import tqdm

from ..served.client import without_credentials

EVALUATOR = "view_suite"  # the parent of run_eval's and runner's loggers (view_suite.run_eval, view_suite.runner)
# a secret's value in VAGEN's printed config (``api_key: sk-...``) or in an override (``...api_key=sk-...``)
_SECRET = re.compile(r"(?i)([\w.-]*(?:api_key|token|secret|password)[\w.-]*\s*[:=]\s*)(?!null\b)([^\s'\",\]]+)")


def redacted(text: str) -> str:
    """``text`` without secrets, as a file or a message may keep it: the value of every key,
    token, secret or password setting, and the ``user:password@`` of every URL."""
    return without_credentials(_SECRET.sub(r"\1<redacted>", text))


class _Terminal(logging.Handler):
    """The evaluator's records: finished jobs counted on ``bar``, warnings and errors shown above it."""

    def __init__(self, bar: tqdm | None, terminal):
        super().__init__(logging.INFO)
        self.bar, self.terminal = bar, terminal
        self.addFilter(lambda record: record.name.startswith(EVALUATOR))

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.bar is not None and message.startswith("Total pending jobs: "):
            self.bar.total = int(message.rsplit(" ", 1)[1])
            self.bar.refresh()
        elif self.bar is not None and message.startswith(("Job finish", "Job error")):
            self.bar.update(1)
        if record.levelno >= logging.WARNING:
            line = f"VAGEN {record.levelname.lower()}: {message.splitlines()[0]}"
            self.bar.write(line, file=self.terminal) if self.bar is not None else print(line, file=self.terminal)


@contextlib.contextmanager
def quietly(printed: TextIO, verbose: bool = False, progress: str | None = None) -> Iterator[None]:
    """VAGEN's prints, warnings and logging into ``printed``, unless ``verbose``; with
    ``progress``, a bar of that name counts its finished jobs on the terminal."""
    if verbose:
        yield
        return
    terminal = sys.stderr
    root = logging.getLogger()
    level = root.level
    with tqdm(desc=progress, unit="board", file=terminal) if progress else contextlib.nullcontext() as bar:
        to_file = logging.StreamHandler(printed)
        to_file.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
        handlers = [to_file, _Terminal(bar, terminal)]
        for handler in handlers:  # with a handler on the root, VAGEN's logging.basicConfig adds none of its own
            root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                yield
        finally:
            for handler in handlers:
                root.removeHandler(handler)
            root.setLevel(level)
