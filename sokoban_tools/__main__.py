"""Reproduce every published file from seeds, in dependency order.

    python -m sokoban_tools reproduce           # rewrite everything
    python -m sokoban_tools reproduce --check   # regenerate in memory, fail on any difference
    python -m sokoban_tools benchmark           # time the pipeline and print the figures
    python -m sokoban_tools benchmark --write   # ... and write them to BENCHMARKS.md and the card
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Each step is its own command, run in a fresh process in dependency order; the
# selector is a top-level script, which the package never imports.
STEPS = (
    ("pools", ["-m", "sokoban_tools.pools"]),
    ("selection", [str(REPO / "select_evaluation_256.py")]),
    ("summary", ["-m", "sokoban_tools.summary"]),
    ("verification", ["-m", "sokoban_tools.verify"]),
    ("card", ["-m", "sokoban_tools.card"]),
)


def reproduce(check: bool) -> int:
    """Run every step; stop at the first that fails, since later steps read its files."""
    started = time.perf_counter()
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
    commands.add_parser("benchmark", add_help=False,
                        help="time the pipeline and loading; --write puts the figures in BENCHMARKS.md and the card")
    args, rest = parser.parse_known_args(argv)
    if args.command == "benchmark":
        # Imported here: it loads the datasets library, the card and the verifier,
        # which reproducing does not need in this process.
        from . import benchmark

        return benchmark.main(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return reproduce(args.check)


if __name__ == "__main__":
    sys.exit(main())
