"""``train --publish DIR``: a finished run's validation passes and manifest, written where the
committed runs (``examples/training``) are."""

from __future__ import annotations

from pathlib import Path

from ..files import write_atomic
from ..records.episodes import iter_episodes
from ..records.manifest import manifest_path, read_manifest
from ..records.rows import DataError


def published_name(method: str, seed: int) -> str:
    """The file name ``--publish`` gives a run, and the committed runs have."""
    return f"{method}-{seed}.jsonl"


def publish(log: Path, folder: Path, method: str, seed: int) -> Path:
    """Write ``folder/<method>-<seed>.jsonl``, the validation rows of the finished run ``log`` in
    their order, and its manifest beside it; both are read and checked before either is written."""
    from ..integrations.gymnasium_env.schedule import ENV_STEPS_COST

    manifest = manifest_path(log)
    if ENV_STEPS_COST not in read_manifest(manifest)["costs"]:
        raise DataError(f"{manifest}: the run has not reached its budget (no {ENV_STEPS_COST} cost yet); run the "
                        f"same train command to finish it, then publish")
    fix = "move the log away and train the run again"
    lines = "".join(record.to_line() + "\n" for record in iter_episodes(log, fix) if record.phase == "validation")
    manifest_bytes = manifest.read_bytes()
    out = folder / published_name(method, seed)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(out, lines.encode("utf-8"))
    write_atomic(manifest_path(out), manifest_bytes)
    return out
