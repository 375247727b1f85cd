"""Run many seeds of one method at once, each a ``train`` run in a Ray task.

    python -m sokoban_tools sweep --method M --seeds 0-9 --logs DIR
                                  [--steps N] [--eval-every N] [--publish DIR] [--address ADDR]
                                  [--tuning] [--config K]

Each seed is one run of ``python -m sokoban_tools train``, logged as ``DIR/<method>-<seed>.jsonl``
with its manifest and checkpoint beside it, byte for byte as ``train --log`` logs it. Each run is
a Ray task that asks for one CPU and runs ``train`` as a child process with one torch thread, so
a machine or cluster runs as many at once as it has cores. Without ``--address`` the sweep starts
a Ray of its own on the cores this process may use, and stops it at the end. With ``--address``
(or Ray's ``RAY_ADDRESS``) the runs go to that cluster, the Ray that the verl-agent integration
uses; its nodes must see ``DIR`` at the same path.

A sweep started again on the same ``DIR`` restarts where it stopped. A run whose manifest holds
its costs has reached its budget and is skipped (with ``--publish``, published if it is not yet). The
others run ``train`` on their logs again, which continues each from its checkpoint. The child
process dies with its Ray worker, so a killed sweep leaves no run writing behind it (the log's
lock refuses a second writer anyway). A run that fails is reported, and the others go on. The
exit status is 1 if any run failed; running the same command again resumes the failed runs.

One line per run and event: started (or resumed), each validation pass as ``train`` prints it,
and finished, with the CPU-seconds and wall seconds the run spent in this sweep.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ..extras import install_advice
from ..help_text import Parser
from ..records.budget import ENV_STEPS_COST
from ..records.manifest import BUDGET_UNIT, ENV_STEPS, TUNING, manifest_path
from ..records.run import OpenRun
from ..records.rows import DataError
from .checkpoint import checkpoint_path
from .publish import publish, published_name
from .train import DEFAULT_STEPS, GRID_POINT, METHODS
from .tuning import GRID

PROG = "python -m sokoban_tools sweep"
RAY_MISSING = f"sweep needs Ray (and train's stable-baselines3 and torch): {install_advice('sweep')}"
BUDGET = "update_budget.total_training_steps"
FREQUENCY = "evaluation.frequency"


def parse_seeds(text: str) -> list[int]:
    """``0-9``, ``0,2,5`` or a mix (``0-3,7``) as the seeds in that order; a malformed item, a
    range that runs backwards or a seed given twice is refused (``ArgumentTypeError``)."""
    seeds: list[int] = []
    for item in text.split(","):
        first, dash, last = item.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise argparse.ArgumentTypeError(
                f"{text!r}: {item.strip()!r} is not a seed (0 or more) or a range of them (A-B); write for "
                f"example 0-9 or 0,2,5")
        low, high = int(first), int(last) if dash else int(first)
        if high < low:
            raise argparse.ArgumentTypeError(f"{text!r}: the range {item.strip()} runs backwards; write {high}-{low}")
        seeds += range(low, high + 1)
    repeated = sorted(seed for seed, count in Counter(seeds).items() if count > 1)
    if repeated:
        raise argparse.ArgumentTypeError(f"{text!r}: seed {repeated[0]} is given twice; give each seed once")
    return seeds


def finished_costs(log: Path, steps: int, every: int | None, tuning: bool = False,
                   config: int | None = None) -> dict | None:
    """The costs of the run at ``log`` if it has reached this budget (``train`` records them then),
    else None; a run of another budget, or another kind (``tuning``) or grid point (``config``), is not
    finished here, and ``train`` refuses to continue it."""
    recorded = OpenRun(log).manifest()
    if recorded is None:
        return None
    settings = recorded["settings"]
    budget = (settings[BUDGET_UNIT], settings[BUDGET], settings[FREQUENCY] if every is not None else None)
    if budget != (ENV_STEPS, steps, every):  # a budget in updates is another learner's
        return None
    learner = recorded.get("notes", {}).get("learner", {})
    if (TUNING in recorded) != tuning or learner.get(GRID_POINT) != config:
        return None
    return recorded["costs"] if ENV_STEPS_COST in recorded["costs"] else None


def _die_with_parent(parent: int) -> None:
    """In the child, before ``train`` starts: the kernel kills it when its Ray worker dies. Ray ends
    a worker's children when the worker exits, but not when it is killed (SIGKILL, the OOM killer)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the worker died before the request took effect
        os._exit(1)


def run_train(options: list[str], label: str, log: str) -> Iterator[dict]:
    """The Ray task of one run: ``train`` with ``options``, as a child process of this worker's Python,
    yielding ``{"line": ...}`` for its start and each validation pass, then ``{"returncode",
    "cpu_seconds", "wall_seconds", "error"}``.

    A child process rather than :func:`.train.train` in the worker: Ray reuses its workers, and a
    child starts each run from a fresh process as the ``train`` command does (one torch thread, every
    generator seeded once), so a resumed run's log has the bytes of one never stopped; the child is
    the command a user would start again by hand, and it cannot outlive its worker.
    """
    if checkpoint_path(Path(log)).exists():
        yield {"line": f"{label}: resumed from its checkpoint"}
    elif Path(log).exists():
        yield {"line": f"{label}: started again (stopped before its first checkpoint: its log is set aside)"}
    else:
        yield {"line": f"{label}: started"}
    package_root = str(Path(__file__).resolve().parents[2])  # the child imports this very package
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    parent = os.getpid()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen([sys.executable, "-m", "sokoban_tools", "train", *options], stdout=subprocess.PIPE,
                                 stderr=errors, env=env, text=True,
                                 preexec_fn=(lambda: _die_with_parent(parent)) if sys.platform == "linux" else None)
        with child.stdout:
            for line in child.stdout:
                if line.startswith(label + ":"):  # train's line for a validation pass
                    yield {"line": line.rstrip("\n")}
        returncode = child.wait()
        errors.seek(0)
        error = errors.read().decode("utf-8", "replace").strip().splitlines()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    yield {"returncode": returncode, "wall_seconds": time.monotonic() - started,
           "cpu_seconds": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
           "error": next((e for e in reversed(error) if e.startswith("error:")), error[-1] if error else "")}


def _cores() -> int:
    """The cores this process may use (its affinity), which a local Ray is given."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def already_published(log: Path, folder: Path, method: str, seed: int) -> bool:
    """Whether ``folder`` holds this finished run's publish (its manifest, byte for byte): a sweep
    started again need not write it twice, and any other file there is left to ``publish`` to refuse."""
    out = folder / published_name(method, seed)
    return out.is_file() and manifest_path(out).is_file() and \
        manifest_path(out).read_bytes() == manifest_path(log).read_bytes()


def sweep(method: str, seeds: list[int], logs: Path, steps: int, every: int | None, publish_to: Path | None,
          address: str | None, tuning: bool = False, config: int | None = None) -> int:
    """Run (or resume) every seed's run (tuning runs with ``tuning``, of tuning grid point ``config``
    when given, as ``train --tuning --config`` trains them); one line per run and event; 0 once all
    are finished."""
    started = time.monotonic()
    logs = logs.resolve()
    label = {seed: f"{METHODS[method]} seed {seed}" for seed in seeds}
    log = {seed: logs / published_name(method, seed) for seed in seeds}
    to_run, failed = [], []
    for seed in seeds:
        costs = finished_costs(log[seed], steps, every, tuning, config)
        if costs is None:
            to_run.append(seed)
            continue
        print(f"{label[seed]}: finished before ({costs['cpu_seconds']['value']:.1f} CPU-seconds in its "
              f"manifest): skipped", flush=True)
        if publish_to is not None and not already_published(log[seed], publish_to, method, seed):
            publish(log[seed], publish_to, method, seed)
    if to_run:
        import ray

        logs.mkdir(parents=True, exist_ok=True)
        address = address or os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:  # a new local Ray, whatever else runs on this machine
            ray.init(address="local", num_cpus=_cores(), include_dashboard=False, log_to_driver=False)
        try:
            task = ray.remote(num_cpus=1, max_retries=0, num_returns="streaming")(run_train)
            options = ["--steps", str(steps), *(["--eval-every", str(every)] if every is not None else []),
                       *(["--publish", str(publish_to.resolve())] if publish_to is not None else []),
                       *(["--tuning"] if tuning else []), *(["--config", str(config)] if config is not None else []),
                       "--quiet"]
            pending = {task.remote(["--method", method, "--seed", str(seed), "--log", str(log[seed]), *options],
                                   label[seed], str(log[seed])): seed for seed in to_run}
            while pending:
                [ready], _ = ray.wait(list(pending), num_returns=1)
                seed = pending[ready]
                try:
                    event = ray.get(next(ready))
                except StopIteration:
                    del pending[ready]
                    continue
                except ray.exceptions.RayError as err:  # the worker or its node was lost
                    event = {"returncode": None, "error": str(err).strip().splitlines()[0]}
                    del pending[ready]
                if "line" in event:
                    print(event["line"], flush=True)
                elif event["returncode"] == 0:
                    print(f"{label[seed]}: finished ({event['cpu_seconds']:.1f} CPU-seconds, "
                          f"{event['wall_seconds']:.1f} s wall in this sweep)", flush=True)
                else:
                    failed.append(seed)
                    print(f"{label[seed]}: failed ({event['error']})", flush=True)
        finally:
            ray.shutdown()
    wall = time.monotonic() - started
    if failed:
        print(f"sweep: {len(seeds) - len(failed)} of {len(seeds)} runs finished in {wall:.1f} s; failed: seeds "
              f"{', '.join(map(str, failed))}; run the same command again to resume them", file=sys.stderr)
        return 1
    print(f"sweep: all {len(seeds)} runs of {METHODS[method]} finished ({len(seeds) - len(to_run)} before this "
          f"sweep) in {wall:.1f} s; logs in {logs}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0],
                    formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--method", choices=sorted(METHODS), required=True, help="the training method")
    parser.add_argument("--seeds", type=parse_seeds, required=True,
                        help="the seeds, one run each: a range (0-9), a list (0,2,5) or both (0-3,7)")
    parser.add_argument("--logs", type=Path, required=True, metavar="DIR",
                        help="the folder of the runs' logs, DIR/<method>-<seed>.jsonl (made if missing)")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS,
                        help=f"env steps of training a run (default {DEFAULT_STEPS:,})")
    parser.add_argument("--eval-every", type=int, default=None,
                        help="env steps between validation passes (default train's: a tenth of --steps)")
    parser.add_argument("--publish", type=Path, default=None, metavar="DIR",
                        help="as each run finishes, write its validation passes and manifest to "
                             "DIR/<method>-<seed>.jsonl")
    parser.add_argument("--tuning", action="store_true",
                        help="tuning runs, as train --tuning trains them (trained outside the tuning split, validated "
                             "on it)")
    parser.add_argument("--config", type=int, choices=range(len(GRID)), metavar=f"0-{len(GRID) - 1}",
                        help="train with this point of the tuning grid, as train --config does")
    parser.add_argument("--address", default=None, metavar="ADDR",
                        help="the Ray cluster to run on (default: RAY_ADDRESS if set, else a Ray of its own on "
                             "this machine's cores)")
    args = parser.parse_args(argv)
    if args.tuning and args.publish is not None:
        parser.error("--publish writes runs validated on the validation boards; leave it out of a tuning sweep")
    if args.steps < 1:
        parser.error("--steps must be 1 or more")
    if args.eval_every is not None and not 1 <= args.eval_every <= args.steps:
        parser.error(f"--eval-every must be between 1 and --steps ({args.steps}), got {args.eval_every}")
    try:
        import ray  # noqa: F401
    except ImportError:
        print(f"error: {RAY_MISSING}", file=sys.stderr)
        return 1
    try:
        return sweep(args.method, args.seeds, args.logs, args.steps, args.eval_every, args.publish, args.address,
                     args.tuning, args.config)
    except DataError as err:  # a run's manifest that cannot be read, or a run that cannot be published
        print(f"error: {err}", file=sys.stderr)
        return 1
    except ConnectionError as err:  # no Ray cluster at --address (or RAY_ADDRESS)
        print(f"error: cannot reach the Ray cluster: {err}; check --address (or RAY_ADDRESS), or leave both out "
              f"to run on this machine", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
