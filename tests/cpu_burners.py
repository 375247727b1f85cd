"""Saturate the machine's CPUs for a while, as CI does when it runs beside other work.

Helper for tests (not a test file). Each burner is a process spinning in a loop that
ends by itself after ``seconds``, so none outlives a test that dies; the context
manager stops them all on the way out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"


@contextmanager
def cpu_burners(count: int | None = None, seconds: float = 600):
    """``count`` spinning processes (default: twice the CPUs) while the block runs."""
    count = 2 * (os.cpu_count() or 1) if count is None else count
    burners = [subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=seconds)]) for _ in range(count)]
    try:
        yield burners
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()
