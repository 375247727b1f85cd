"""Reproduce every published file from seeds, in dependency order.

    python -m sokoban_tools reproduce           # rewrite everything
    python -m sokoban_tools reproduce --check   # regenerate in memory, fail on any difference
    python -m sokoban_tools reproduce --new-release   # rewrite everything; changed data files
                                                      # become the release the card's changelog names
    python -m sokoban_tools benchmark           # time the pipeline and print the figures
    python -m sokoban_tools benchmark --write   # ... and write them to BENCHMARKS.md and docs/reproducing.md
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import time

from .artifacts import clear_interrupted_writes
from .layout import DATA_FOLDER, DOCS_FOLDER, IMAGES_FOLDER, ROOT, SELECTOR, outside_clone
from .publish.release import FLAG as NEW_RELEASE, NOT_WITH_CHECK

REPO = ROOT
GENERATED_DIRECTORIES = (DATA_FOLDER, IMAGES_FOLDER, DOCS_FOLDER)  # besides the repository root
# The steps in dependency order: each is a command of its own (the name the card
# and the reports record). The package's commands run in this process, so the
# three board files are read and checked once (records remembers checked bytes)
# and the libraries load once; the selector is a top-level script the package
# never imports, so it runs as its own process, as a user runs it.
STEPS = (
    ("pools", "sokoban_tools.pools"),
    ("selection", SELECTOR),
    ("summary", "sokoban_tools.summary"),
    ("verification", "sokoban_tools.verify"),
    ("baselines", "sokoban_tools.baselines"),
    ("example", "sokoban_tools.example_policies"),
    ("card", "sokoban_tools.card"),
)
PINNING_STEP = "card"  # pins the data files' digests, so it alone may take a new release


def run_step(command: str, options: list[str]) -> int:
    """Run one step's command with ``options``; its exit code."""
    if command == SELECTOR:
        return subprocess.run([sys.executable, str(REPO / SELECTOR), *options], cwd=REPO).returncode
    try:
        return importlib.import_module(command).main(options)
    except SystemExit as stop:  # an option error, as the command line would report it
        return stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
    finally:
        sys.stdout.flush()


def reproduce(check: bool, new_release: bool = False) -> int:
    """Run every step; stop at the first that fails, since later steps read its files."""
    no_clone = outside_clone([REPO], command="python -m sokoban_tools reproduce")
    if no_clone:
        print(f"error: {no_clone}", file=sys.stderr)
        return 1
    started = time.perf_counter()
    if not check:  # every file is about to be rewritten, so an interrupted write's leftovers can go
        for leftover in clear_interrupted_writes([REPO, *(REPO / d for d in GENERATED_DIRECTORIES)]):
            print(f"removed {leftover.relative_to(REPO)}, left by an interrupted write")
    for name, command in STEPS:
        print(f"== {name}", flush=True)
        options = ["--check"] if check else [NEW_RELEASE] if new_release and name == PINNING_STEP else []
        if run_step(command, options):
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
    run.add_argument(NEW_RELEASE, action="store_true",
                     help="allow published data files to change, as the new release named by the newest "
                          "entry of the card's Changelog section (without it a changed data file is an error)")
    commands.add_parser("benchmark", add_help=False,
                        help="time the pipeline and loading; --write puts the figures in BENCHMARKS.md and docs/reproducing.md")
    args, rest = parser.parse_known_args(argv)
    if args.command == "benchmark":
        # Imported here: it loads the datasets library, the card and the verifier,
        # which reproducing does not need in this process.
        from .publish import benchmark

        return benchmark.main(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.check and args.new_release:
        run.error(NOT_WITH_CHECK)
    return reproduce(args.check, args.new_release)


if __name__ == "__main__":
    sys.exit(main())
