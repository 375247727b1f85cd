"""The command line of sokoban-fairness: ``python -m sokoban_tools <command>``.

Two kinds of commands, listed apart by ``--help``. The user's, in the installed
product (:data:`USER_COMMANDS`), read the boards and episode logs:

    python -m sokoban_tools quickstart           # the demo model evaluated on the 256 boards, then scored
    python -m sokoban_tools score LOG ...        # success with intervals, per update and stratum
    python -m sokoban_tools compare --a LOG --b LOG
    python -m sokoban_tools leaderboard [results/]   # verify every results entry and rank them
    python -m sokoban_tools evaluate --base-url URL --model NAME --log LOG   # a served model
    python -m sokoban_tools inspect-log INSPECT_LOG --log LOG   # the Inspect AI task's log as an episode log
    python -m sokoban_tools demo-model [--policy random]   # a model to evaluate without a GPU
    python -m sokoban_tools vagen evaluate --episode-log LOG   # VAGEN's evaluator on the boards
    python -m sokoban_tools train --method ppo --seed 0 --log LOG   # PPO, GRPO, GiGPO, RLOO or Dr. GRPO on a CPU
    python -m sokoban_tools sweep --method ppo --seeds 0-9 --logs DIR   # many seeds at once on Ray

The maintainers' pipeline (:data:`PIPELINE_COMMANDS`) rewrites the published files and
runs from a clone, where ``sokoban_tools.pipeline`` exists (the wheel does not ship it):

    python -m sokoban_tools reproduce [--check]  # regenerate every published file
    python -m sokoban_tools benchmark [--write]  # time the pipeline against the original code

Each command is a row of a table; its module is imported only when it runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass

from .help_text import Parser
from .layout import HUB_URL, ROOT, SELECTOR

Main = Callable[[list[str]], int]
PROG = "python -m sokoban_tools"
HOW_TO_CLONE = f"clone the repository (`git clone {HUB_URL}`) and run `pip install -e .` in it"


def _quickstart() -> Main:
    from .integrations.served.quickstart import main
    return main


def _score() -> Main:
    from .evaluation.score import main
    return main


def _compare() -> Main:
    from .evaluation.compare import main
    return main


def _leaderboard() -> Main:
    from .evaluation.leaderboard import main
    return main


def _evaluate() -> Main:
    from .integrations.served.evaluate import main
    return main


def _inspect_log() -> Main:
    from .integrations.inspect_task.convert import main
    return main


def _demo_model() -> Main:
    from .integrations.served.demo_model import main
    return main


def _vagen() -> Main:
    from .integrations.vagen.cli import main
    return main


def _train() -> Main:
    from .training.train import main
    return main


def _sweep() -> Main:
    from .training.sweep import main
    return main


def _example() -> Main:
    from .pipeline.example_policies import main
    return main


def _pools() -> Main:
    from .pipeline.generate.pools import main
    return main


def _selection() -> Main:
    # The selector is a top-level script the package never imports: it runs as its own
    # process, as a user runs it, named in its messages as this command line names it.
    program = f"import sys, select_evaluation_256 as s; sys.exit(s.main(sys.argv[1:], prog={PROG + ' selection'!r}))"
    return lambda options: subprocess.run([sys.executable, "-c", program, *options], cwd=ROOT).returncode


def _tuning() -> Main:
    from .pipeline.generate.tuning_selection import main
    return main


def _tuning_search() -> Main:
    from .training.tuning_search import main
    return main


def _summary() -> Main:
    from .pipeline.verification.summary import main
    return main


def _verify() -> Main:
    from .pipeline.verification.verify import main
    return main


def _baselines() -> Main:
    from .pipeline.baselines import main
    return main


def _results() -> Main:
    from .pipeline.results_entries import main
    return main


def _card() -> Main:
    from .pipeline.publish.card import main
    return main


def _benchmark() -> Main:
    from .pipeline.publish.benchmark import main
    return main


def _reproduce() -> Main:
    return reproduce_command


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    load: Callable[[], Main]
    clone_only: bool  # its code is in sokoban_tools.pipeline, which runs from a clone


# What a user runs: the boards and episode logs in, results out (example from a clone).
USER_COMMANDS = (
    Command("quickstart", "the quick start: serve the demo model, evaluate it on the validation boards, score it",
            _quickstart, False),
    Command("score", "score episode logs: success with 95% intervals, per update and stratum", _score, False),
    Command("compare", "compare two methods board by board with paired statistics", _compare, False),
    Command("leaderboard", "verify every results entry (replaying its episodes) and rank them with exact "
            "statistics; --add writes an entry", _leaderboard, False),
    Command("evaluate", "play a served model, vision-language or text, on the validation boards as "
            "verl-agent's validation does, and log it", _evaluate, False),
    Command("inspect-log", "convert the log of the Inspect AI task (inspect eval sokoban_tools/sokoban_fairness) "
            "into an episode log and run manifest, every episode replayed", _inspect_log, False),
    Command("demo-model", "serve a demo model to evaluate without a GPU; its policies: random, shortest (solves "
            "every board), bad-answers, mixed (mostly shortest, some wasted moves and bad answers)", _demo_model, False),
    Command("vagen", "evaluate with VAGEN's evaluator on the validation boards and log its episodes", _vagen, False),
    Command("train", "train PPO, GRPO, GiGPO, RLOO or Dr. GRPO on the training boards (a CPU is enough), validating on "
            "the 256 and logging every episode", _train, False),
    Command("sweep", "train many seeds of one method at once as Ray tasks, one CPU each, on this machine or a "
            "Ray cluster; started again, it resumes where it stopped", _sweep, False),
    Command("example", "play the worked example's two policies and log them (from a clone)", _example, True),
)
# What the maintainers run, from a clone: the steps that write the published files, in order, and their tools.
PIPELINE_COMMANDS = (
    Command("pools", "generate the training and source pools from seeds", _pools, True),
    Command("selection", f"select the 256 validation boards ({SELECTOR})", _selection, True),
    Command("tuning", "select the 256 tuning boards held out of the training pool (fairness/"
            "tuning-256.selection.json)", _tuning, True),
    Command("tuning-search", "check every run of the tuning search in its logs and write its record (examples/"
            "tuning/search.json)", _tuning_search, True),
    Command("summary", "write the split counts and statistics", _summary, True),
    Command("verify", "replay and verify every published board", _verify, True),
    Command("baselines", "compute the exact random-policy baselines", _baselines, True),
    Command("results", "play and write the baseline and worked-example entries of results/", _results, True),
    Command("card", "write the dataset card, its pages and pictures, and the pins", _card, True),
    Command("reproduce", "regenerate (or --check) every published file, step by step", _reproduce, True),
    Command("benchmark", "time the pipeline, loading and runtime; --write keeps the figures in BENCHMARKS.md",
            _benchmark, True),
)
COMMANDS = USER_COMMANDS + PIPELINE_COMMANDS
BY_NAME = {command.name: command for command in COMMANDS}
# reproduce's steps, in dependency order: each reads what the earlier ones wrote.
STEPS = ("pools", "selection", "tuning", "summary", "verify", "baselines", "example", "results", "card")
# The steps that write published data files (pools, selection) check them against the
# pinned release before writing, and the card pins them: these take a new release.
RELEASE_STEPS = ("pools", "selection", "card")


def run(name: str, options: list[str]) -> int:
    """Command ``name`` with ``options``, as its exit code; a pipeline command outside a
    clone says so in one line."""
    command = BY_NAME[name]
    if command.clone_only and not has_pipeline():
        print(f"error: `python -m sokoban_tools {name}` runs from a clone of sokoban-fairness, whose "
              f"files it reads and rewrites; this installation holds the product only (the wheel ships "
              f"no pipeline): {HOW_TO_CLONE}", file=sys.stderr)
        return 1
    try:
        try:
            return command.load()(options)
        except SystemExit as stop:  # an option error, as the command line would report it
            return stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        finally:
            sys.stdout.flush()
    except BrokenPipeError:  # the reader closed the pipe (`score ... | head -1`): it has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        return 1


def has_pipeline() -> bool:
    """Whether the build pipeline is here: in a clone, not in an installed wheel."""
    try:
        from . import pipeline  # noqa: F401
    except ImportError:
        return False
    return True


def reproduce_command(argv: list[str]) -> int:
    """``reproduce``: every step in order, holding the lock of every folder they write
    (shared for ``--check``); stops at the first that fails, since later steps read
    its files."""
    from .pipeline.release import FLAG as NEW_RELEASE, NOT_WITH_CHECK

    parser = Parser(prog=f"{PROG} reproduce",
                    description=BY_NAME["reproduce"].summary)
    parser.add_argument("--check", action="store_true",
                        help="regenerate in memory and fail, naming the first differing line, on any difference")
    parser.add_argument(NEW_RELEASE, action="store_true", dest="new_release",
                        help="allow published data files to change, as the new release named by the newest "
                             "entry of the card's Changelog section (without it a changed data file is an error)")
    args = parser.parse_args(argv)
    if args.check and args.new_release:
        parser.error(NOT_WITH_CHECK)
    return reproduce(args.check, args.new_release)


def reproduce(check: bool, new_release: bool = False) -> int:
    """The steps of ``reproduce`` under the locks of the folders they write; one line
    and exit 1 if another run holds one."""
    from .pipeline.artifacts import REPRODUCED_DIRECTORIES, LockError, locked

    try:
        with locked(REPRODUCED_DIRECTORIES, shared=check):
            return _steps(check, new_release)
    except LockError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def _steps(check: bool, new_release: bool) -> int:
    from .pipeline.artifacts import REPRODUCED_DIRECTORIES, clear_interrupted_writes, interrupted_writes
    from .pipeline.release import FLAG as NEW_RELEASE

    started = time.perf_counter()
    if check:
        problems = interrupted_writes(REPRODUCED_DIRECTORIES)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if problems:
            return 1
    else:  # every file is about to be rewritten, so an interrupted write's leftovers can go
        try:
            removed = clear_interrupted_writes(REPRODUCED_DIRECTORIES)
        except OSError as err:
            print(f"error: {err.filename}: cannot be removed ({err.strerror}), but it is where a write keeps "
                  f"its journal or temporaries; move it away", file=sys.stderr)
            return 1
        for leftover in removed:
            print(f"removed {os.path.relpath(leftover, ROOT)}, left by an interrupted write")
    for name in STEPS:
        print(f"== {name}", flush=True)
        options = ["--check"] if check else [NEW_RELEASE] if new_release and name in RELEASE_STEPS else []
        if run(name, options):
            print(f"reproduce: the {name} step failed; see the message above", file=sys.stderr)
            return 1
    if new_release and not check:
        from sokoban_published import RELEASE

        from .pipeline.release import pinned_of
        if pinned_of(ROOT).version != RELEASE:
            # The card step pinned the new release after the example step wrote its manifests with the
            # old one, which this process still holds: the steps from the example on run again in a
            # new process, which reads the new pins (under this run's locks, as its child).
            for name in STEPS[STEPS.index("example"):]:
                print(f"== {name} (with release {pinned_of(ROOT).version})", flush=True)
                if subprocess.run([sys.executable, "-m", "sokoban_tools", name], cwd=ROOT).returncode:
                    print(f"reproduce: the {name} step failed; see the message above", file=sys.stderr)
                    return 1
    verb = "all files are byte-identical" if check else "all files written"
    print(f"reproduce: {verb} ({time.perf_counter() - started:.1f} s)")
    return 0


def _listing(title: str, commands: tuple[Command, ...]) -> str:
    """``title`` and one row per command: its name, and its summary wrapped beside it."""
    indent = " " * (max(len(command.name) for command in COMMANDS) + 4)
    rows = [textwrap.fill(command.summary, 79, initial_indent=f"  {command.name:<{len(indent) - 2}}",
                          subsequent_indent=indent) for command in commands]
    return "\n".join([title, *rows])


def parser() -> argparse.ArgumentParser:
    """The top level: a command's name; everything after it is the command's own."""
    top = Parser(
        prog=PROG, usage=f"{PROG} COMMAND [options]", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="sokoban-fairness: fixed Sokoban boards to train and validate agents on, and the\n"
                    "tools that evaluate, score and compare runs on them. Each command's --help gives\n"
                    "its options.\n\n"
                    + _listing("Your commands:", USER_COMMANDS) + "\n\n"
                    + _listing("The maintainers' pipeline (from a clone; rewrites the published files):",
                               PIPELINE_COMMANDS))
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS)
    for command in COMMANDS:
        commands.add_parser(command.name, add_help=False)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args, _ = parser().parse_known_args(argv[:1])
    return run(args.command, argv[1:])


if __name__ == "__main__":
    sys.exit(main())
