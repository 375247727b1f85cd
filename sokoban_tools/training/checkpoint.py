"""A training run's checkpoint, ``LOG.checkpoint`` beside its episode log: where it lives,
how it is written after every pass, and how it is read back and matched to the command
and to the log.

The file is one JSON header line, then the learner's state as ``torch.save`` wrote it. The
header holds the log the state belongs to (how many complete lines the log held when the
checkpoint was written, and the SHA-256 of those lines), the state's size, and one SHA-256
of those log fields and the state together, so neither can change without the other. A resume reads the header, checks the state's digest and then the log's first lines
against it before it unpickles anything or touches the log, so a checkpoint altered, cut
or of another point of the run, and a log edited, cut or deleted since, are refused in one
line naming the file and the fix, instead of continuing silently to another log.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from pathlib import Path

from ..files import write_atomic
from ..paths import read_bounded
from ..records.rows import DataError

CHECKPOINT = ".checkpoint"
FORMAT = "sokoban-fairness training checkpoint 3"
MAX_CHECKPOINT_BYTES = 1 << 30  # a checkpoint of the project's network is about 3 MB
_MAX_HEADER = 4096
START_AGAIN = "move the checkpoint away to start the run again (the log's records are then set aside, kept)"


def checkpoint_path(log: Path) -> Path:
    return log.with_name(log.name + CHECKPOINT)


def log_prefix(log: Path, records: int | None = None) -> tuple[int, str]:
    """How many of the log's first ``records`` lines (default: all) it holds whole (a torn last
    line is not a record), and the SHA-256 of those lines; read a line at a time (a long run's
    log is tens of MB)."""
    digest, found = hashlib.sha256(), 0
    if records != 0 and log.is_file():
        with open(log, "rb") as lines:
            for line in lines:
                if found == records or not line.endswith(b"\n"):
                    break
                digest.update(line)
                found += 1
    return found, digest.hexdigest()


def log_records(log: Path) -> int:
    """The complete lines of the log."""
    return log_prefix(log)[0]


def _digest(records: int, log_sha256: str, state: bytes) -> str:
    return hashlib.sha256(f"{records} {log_sha256}\n".encode("ascii") + state).hexdigest()


def save_checkpoint(run, started_cpu: float) -> None:
    """Write ``run``'s state after a pass, with the digests of itself and of its log so far."""
    import torch

    run.cpu_seconds += time.process_time() - started_cpu
    records, log_sha256 = log_prefix(run.log)
    buffer = io.BytesIO()
    torch.save(run.state_dict(records), buffer)
    state = buffer.getvalue()
    header = {"format": FORMAT, "log_records": records, "log_sha256": log_sha256, "state_bytes": len(state),
              "sha256": _digest(records, log_sha256, state)}
    write_atomic(checkpoint_path(run.log), json.dumps(header).encode("utf-8") + b"\n" + state)


def _header(path: Path, data: bytes) -> tuple[dict, bytes]:
    """The header and the state bytes of the checkpoint ``data``, both checked."""
    first, newline, state = data.partition(b"\n")
    try:
        header = json.loads(first.decode("utf-8")) if newline and len(first) <= _MAX_HEADER else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise DataError(f"{path}: not a training checkpoint of this version (written by another version, or not a "
                        f"checkpoint); {START_AGAIN}")
    records, log_sha256 = header.get("log_records"), header.get("log_sha256")
    if (not isinstance(records, int) or not isinstance(log_sha256, str) or len(state) != header.get("state_bytes")
            or _digest(records, log_sha256, state) != header.get("sha256")):
        raise DataError(f"{path}: its {len(state):,} bytes of state are not those its header records "
                        f"({header.get('state_bytes')} bytes and their SHA-256): the checkpoint was cut or altered "
                        f"since it was written; {START_AGAIN}")
    return header, state


def check_log(path: Path, log: Path, header: dict) -> None:
    """Refuse a log that is not the one the checkpoint at ``path`` was written after."""
    records = header["log_records"]
    found, digest = log_prefix(log, records)
    put_back = f"put back the log the checkpoint was written with and run the same command, or {START_AGAIN}"
    if found < records:
        held = "does not exist" if not log.exists() else f"holds {found:,} complete records"
        raise DataError(f"{log}: {held}, but its checkpoint {path.name} was written after {records:,}: the log was "
                        f"cut, replaced or deleted since (or the checkpoint is of a later point of the run); "
                        f"{put_back}")
    if digest != header["log_sha256"]:
        raise DataError(f"{log}: its first {records:,} records are not those its checkpoint {path.name} was written "
                        f"after (their SHA-256 differs): a record was edited, or the log replaced, since; {put_back}")


def _option(key: str, value) -> str:
    """How the command line gives the checkpoint's ``value`` of ``key``."""
    if key == "tuning":
        return "--tuning" if value else "no --tuning"
    if key == "config":
        return "no --config" if value is None else f"--config {value}"
    return f"--{'eval-every' if key == 'every' else key} {value}"


def load_checkpoint(path: Path, log: Path, method: str, seed: int, steps: int, every: int, tuning: bool = False,
                    config: int | None = None) -> dict:
    """The state of the checkpoint at ``path`` of the run ``log``, once the file, the log and the
    command's options are all known to match it; a :class:`DataError` naming the fix otherwise."""
    import torch

    if not path.is_file():  # a directory, a FIFO (whose read would wait for ever), a device
        raise DataError(f"{path}: is not a regular file, so not a training checkpoint; move it away (the run writes "
                        f"its checkpoint there)")
    header, state = _header(path, read_bounded(path, MAX_CHECKPOINT_BYTES, "training checkpoint"))
    check_log(path, log, header)
    state = torch.load(io.BytesIO(state), weights_only=False)  # the bytes save_checkpoint wrote, checked
    asked = {"method": method, "seed": seed, "steps": steps, "every": every, "tuning": tuning, "config": config}
    state = {"tuning": False, "config": None, **state}  # a checkpoint of before tuning runs: neither
    differ = [key for key, value in asked.items() if state[key] != value]
    if differ:
        saved = ", ".join(_option(key, state[key]) for key in differ)
        raise DataError(f"{path}: the checkpoint is of a run with {saved}; run it with those, or give this run "
                        f"another --log")
    return state
