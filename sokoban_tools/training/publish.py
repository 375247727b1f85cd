"""``train --publish DIR``: a finished run's validation passes and manifest, written where the
committed runs (``examples/training``) are.

The destination is checked before the run trains (:func:`check_destination`): a folder that
is a file or cannot be written, a published file that would be the log itself or its
manifest, and an earlier publish of the run there (written over only with ``--replace``) are
refused in one line naming the fix, so no run trains for hours to fail at its end.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..files import write_atomic
from ..paths import unwritable
from ..records.episodes import iter_episodes
from ..records.manifest import manifest_path
from ..records.run import OpenRun
from ..records.rows import DataError


def published_name(method: str, seed: int) -> str:
    """The file name ``--publish`` gives a run, and the committed runs have."""
    return f"{method}-{seed}.jsonl"


def _same(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def check_destination(log: Path, folder: Path, method: str, seed: int, replace: bool = False) -> str | None:
    """Why ``--publish folder`` cannot take the run ``log``, with the fix; ``None`` if it can."""
    out = folder / published_name(method, seed)
    for target in (out, manifest_path(out)):
        if _same(target, log) or _same(target, manifest_path(log)):
            return (f"--publish {folder}: would write {target} over the run's own log or manifest (--log {log}), "
                    f"losing its training rows; give --publish another folder")
    for target in (out, manifest_path(out)):
        problem = unwritable(target, "--publish")
        if problem:
            return f"--publish {problem}"
    earlier = [target.name for target in (out, manifest_path(out)) if target.exists()]
    if earlier and not replace:
        return (f"--publish {folder}: holds {' and '.join(earlier)} already, an earlier publish of {method} seed "
                f"{seed}; give --replace to write over it, or another --publish folder")
    return None


def publish(log: Path, folder: Path, method: str, seed: int, replace: bool = False) -> Path:
    """Write ``folder/<method>-<seed>.jsonl``, the validation rows of the finished run ``log`` in
    their order, and its manifest beside it; both are read and checked, and the destination
    (:func:`check_destination`), before either is written."""
    from ..records.budget import ENV_STEPS_COST

    problem = check_destination(log, folder, method, seed, replace)
    if problem:
        raise DataError(problem)
    opened = OpenRun(log)  # its manifest read once: checked, then copied as it is
    if ENV_STEPS_COST not in opened.required_manifest()["costs"]:
        raise DataError(f"{opened.manifest_path}: the run has not reached its budget (no {ENV_STEPS_COST} cost yet); "
                        f"run the same train command to finish it, then publish")
    fix = "move the log away and train the run again"
    lines = "".join(record.to_line() + "\n" for record in iter_episodes(log, fix) if record.phase == "validation")
    manifest_bytes = opened.manifest_bytes
    out = folder / published_name(method, seed)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(out, lines.encode("utf-8"))
    write_atomic(manifest_path(out), manifest_bytes)
    return out
