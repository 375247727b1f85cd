"""A training run's checkpoint, ``LOG.checkpoint`` beside its episode log: where it lives,
how it is written after every pass, and how it is read back and matched to the command."""

from __future__ import annotations

import io
import time
from pathlib import Path

from ..files import write_atomic
from ..records.rows import DataError

CHECKPOINT = ".checkpoint"
FORMAT = "sokoban-fairness training checkpoint 1"


def checkpoint_path(log: Path) -> Path:
    return log.with_name(log.name + CHECKPOINT)


def log_records(log: Path) -> int:
    """The complete lines of the log (a torn last line is not a record)."""
    return log.read_bytes().count(b"\n") if log.exists() else 0


def save_checkpoint(run, started_cpu: float) -> None:
    import torch

    run.cpu_seconds += time.process_time() - started_cpu
    buffer = io.BytesIO()
    torch.save(run.state_dict(log_records(run.log)), buffer)
    write_atomic(checkpoint_path(run.log), buffer.getvalue())


def load_checkpoint(path: Path, method: str, seed: int, steps: int, every: int) -> dict:
    import torch

    state = torch.load(path, weights_only=False)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise DataError(f"{path}: not a training checkpoint of this version; move it away to start the run again")
    asked = {"method": method, "seed": seed, "steps": steps, "every": every}
    differ = [key for key, value in asked.items() if state[key] != value]
    if differ:
        saved = ", ".join(f"--{'eval-every' if k == 'every' else k} {state[k]}" for k in differ)
        raise DataError(f"{path}: the checkpoint is of a run with {saved}; run it with those, or give this run "
                        f"another --log")
    return state
