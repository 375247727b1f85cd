"""The machine a run trained on, as its manifest records it.

A run is deterministic on one machine class: the same seed, CPU (model and instruction-set
flags, which decide torch's kernels), torch thread count and library versions write the same
bytes. On another, floating-point differences can change a move and the run diverges, and
only its statistics compare. The record lets a reader tell which case holds.
"""

from __future__ import annotations

import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PACKAGES = ("torch", "numpy", "stable-baselines3")


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return {}
    fields = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def machine_record() -> dict:
    """CPU model and flags, torch's CPU capability and threads, and the versions that decide the bytes."""
    import torch

    info = _cpuinfo()
    return {"cpu_model": info.get("model name") or platform.processor() or platform.machine(),
            "cpu_flags": " ".join(sorted(info.get("flags", "").split())) or None,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(), "platform": f"{sys.platform} {platform.machine()}",
            **{package: _version(package) for package in PACKAGES}}


def same_machine_class(recorded: dict | None, current: dict) -> bool:
    """Whether a run recorded on ``recorded`` should write the bytes a run on ``current`` writes:
    every field of the record equal (None, a run that predates the record: not known, so no)."""
    return recorded is not None and recorded == current
