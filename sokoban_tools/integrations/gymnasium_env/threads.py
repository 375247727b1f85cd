"""One line when torch runs more threads than this process can use.

torch starts as many threads as the machine has cores, whatever share of them the process
may use or other work leaves free. A small policy's forward and backward then spend their
time waiting on each other's threads: a batched PPO loop over these boards ran 7-11 times
slower with torch's default two threads than with one on a busy two-core machine, and a
hand-written stable-baselines3 script 30 times slower than ``train`` (which sets one thread),
with no word of why. The environment cannot see a learner's threads being set, but it sees
the learner's progress: :func:`warn_once` runs at the first update a learner labels
(``set_update``), when its settings are final and before most of the run's time is spent,
and only where torch is already imported (it never imports it).
"""

from __future__ import annotations

import os
import sys
import warnings

_warned = False


def oversubscription() -> str | None:
    """What torch's thread count costs here, or ``None`` when it fits: more threads than the
    cores this process may run on, or more than one while the other work on the machine
    (the 1-minute load average) already fills those cores."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    threads = torch.get_num_threads()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if threads > usable:
        why = f"more than the {usable} core(s) this process may use"
    elif threads > 1 and load >= usable:
        why = f"while the machine's load average ({load:.1f}) already fills the {usable} core(s) it may use"
    else:
        return None
    return (f"torch runs {threads} threads, {why}: its threads then wait on each other (a small policy trained "
            f"7-11x slower here than on one thread); call torch.set_num_threads(1) before training, as "
            f"`python -m sokoban_tools train` does")


def warn_once() -> None:
    """:func:`oversubscription`'s line as a ``RuntimeWarning``, once per process."""
    global _warned
    if _warned:
        return
    message = oversubscription()
    if message is not None:
        _warned = True
        warnings.warn(message, RuntimeWarning, stacklevel=3)
