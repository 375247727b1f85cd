"""Reproduce every published file from seeds, in dependency order.

    python -m sokoban_tools reproduce           # rewrite everything
    python -m sokoban_tools reproduce --check   # regenerate in memory, fail on any difference
    python -m sokoban_tools benchmark           # time the pipeline, write BENCHMARKS.md and the card
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from . import benchmark
from .artifacts import clear_interrupted_writes

REPO = Path(__file__).resolve().parent.parent
GENERATED_DIRECTORIES = ("fairness", "images")  # besides the repository root
# Each step is its own command, run in a fresh process in dependency order; the
# selector is a top-level script, which the package never imports.
STEPS = (
    ("pools", ["-m", "sokoban_tools.pools"]),
    ("selection", [str(REPO / "select_evaluation_256.py")]),
    ("summary", ["-m", "sokoban_tools.summary"]),
    ("verification", ["-m", "sokoban_tools.verify"]),
    ("baselines", ["-m", "sokoban_tools.baselines"]),
    ("example", ["-m", "sokoban_tools.example_policies"]),
    ("card", ["-m", "sokoban_tools.card"]),
)


def reproduce(check: bool) -> int:
    """Run every step; stop at the first that fails, since later steps read its files."""
    started = time.perf_counter()
    if not check:  # every file is about to be rewritten, so an interrupted write's leftovers can go
        for leftover in clear_interrupted_writes([REPO, *(REPO / d for d in GENERATED_DIRECTORIES)]):
            print(f"removed {leftover.relative_to(REPO)}, left by an interrupted write")
    for name, command in STEPS:
        print(f"== {name}", flush=True)
        if subprocess.run([sys.executable, *command, *(["--check"] if check else [])], cwd=REPO).returncode:
            print(f"reproduce: the {name} step failed; see the message above", file=sys.stderr)
            return 1
    verb = "all files are byte-identical" if check else "all files written"
    print(f"reproduce: {verb} ({time.perf_counter() - started:.1f} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sokoban_tools", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("reproduce", help="regenerate (or --check) every published file")
    run.add_argument("--check", action="store_true",
                     help="regenerate in memory and fail, naming the first differing line, on any difference")
    commands.add_parser("benchmark", help="time the pipeline and loading; write BENCHMARKS.md and the card")
    args = parser.parse_args(argv)
    if args.command == "benchmark":
        return benchmark.main()
    return reproduce(args.check)


if __name__ == "__main__":
    sys.exit(main())
