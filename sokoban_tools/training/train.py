"""Train one of the methods on the 5,000 training boards and validate on the 256.

    python -m sokoban_tools train --method METHOD --seed S --log LOG
                                  [--steps N] [--eval-every N] [--publish DIR [--replace]] [--quiet]
                                  [--tuning] [--config K]

One network, one budget and one schedule for every method (:data:`.methods.METHODS`):
stable-baselines3's ``ActorCriticPolicy`` layout (two layers of 256, tanh) over the one-hot grid
observation of ``SokobanFairness-v1``, ``--steps`` env steps of training, a greedy validation
pass over all 256 boards before training, every ``--eval-every`` env steps and after the last.
The episode log ``LOG`` holds every training episode and every validation pass, its run
manifest beside it (every setting; in its notes the method's recipe, each setting with its
source and whether it deviates from the method's source, and the machine; the costs);
``LOG.checkpoint`` is written after every pass. A run started again on its log
continues from its checkpoint: the records written after it are set aside (kept beside
the log, see :func:`sokoban_tools.records.episodes.set_aside`) and played again, so the
log holds each record once and, the run being deterministic (one torch thread, every
generator seeded and checkpointed), the same bytes as a run never stopped. ``--publish DIR``,
once the run has reached its budget, writes ``DIR/<method>-<seed>.jsonl``: the log's
validation passes, line for line, with the manifest beside it (the training rows, 20-30 MB a
run of 1M steps, stay in the log); the runs under ``examples/training`` are these.

PPO is stable-baselines3's estimator, with its GAE critic, batched over 256 environments stepped
as arrays (``SokobanFairnessVector-v1``: one forward for all, minibatches of 512); GRPO, GiGPO,
RLOO and Dr. GRPO compute their advantages as verl-agent's own functions do and train with its
actor loss and its Sokoban launchers' recipe, except where a method's recipe states a CPU-scale
deviation and why.
None was tuned, and never on the validation boards.

``--tuning`` makes a tuning run: it trains on the 4,744 training boards outside the tuning split
(``fairness/tuning-256.selection.json``) and validates on the split's 256 boards instead of the
validation boards; its manifest says so, and score, compare and leaderboard refuse its log.
``--config K`` trains with point K of the tuning grid stated in advance
(:mod:`sokoban_tools.training.tuning`), which the manifest's recipe records as the values' source.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from ..help_text import Parser
from ..paths import os_error_line
from ..records.episodes import EpisodeWriter, episode_writer
from ..records.manifest import manifest_path
from ..records.rows import DataError
from ..records.tuning_split import TUNING_SELECTION, TUNING_SIZE
from .checkpoint import FORMAT, checkpoint_path, load_checkpoint, log_records, save_checkpoint
from .machine import machine_record
from .methods import BY_NAME, LABELS
from .publish import check_destination, publish
from .recipe import NETWORK, SOURCES, recipe_notes
from .tuning import GRID, grid_point, tuned_recipe

METHODS = LABELS  # name -> label, from the one list of methods
DEFAULT_STEPS = 1_000_000  # the committed runs' budget, every method's (docs/training.md)
VALIDATION_ENVS = 16
PASS_NAME = {False: "validation", True: "tuning-split validation"}  # what a pass plays, by --tuning
GRID_POINT = "tuning_grid_point"  # the learner notes' --config, in a run given one


def hyperparameters(method: str, config: int | None = None) -> dict:
    """What the manifest's notes record of the learner: its recipe (with tuning grid point ``config``'s
    values where one is given), each setting's value, source and deviation, and the machine the run
    trains on."""
    module = BY_NAME[method]
    recipe = module.RECIPE if config is None else tuned_recipe(module.RECIPE, module.TUNED, config)
    return {"method": module.LABEL, "summary": module.SUMMARY,
            **({} if config is None else {GRID_POINT: config}),
            "hyperparameters": {choice.name: choice.value for choice in recipe},
            "recipe": recipe_notes(recipe), "sources": SOURCES, "machine": machine_record()}


def settings(method: str) -> dict:
    """The controlled settings the learner states (the environment states its own)."""
    return {"initial_weights.model": f"MLP {NETWORK} (random initialisation seeded by the run)",
            "reward.invalid_action_penalty": False,
            "decoding.training.temperature": 1.0, "decoding.training.top_p": 1.0, "decoding.training.top_k": -1,
            "decoding.training.do_sample": True, **BY_NAME[method].CONTROLLED,
            "decoding.validation.do_sample": False, "decoding.validation.n": 1}


class Run:
    """One run's learner, validation environments, schedule and log."""

    def __init__(self, method: str, seed: int, log: Path, steps: int, every: int, tuning: bool = False,
                 config: int | None = None):
        import torch

        from ..integrations.gymnasium_env.env import SokobanFairnessEnv
        from ..records.budget import StepSchedule

        self.method, self.seed, self.log, self.tuning, self.config = method, seed, log, tuning, config
        self.schedule = StepSchedule(steps, every)
        torch.set_num_threads(1)
        _seed_everything(seed)
        common = {"observation": "grid", "episode_log": log, "method": METHODS[method], "run": str(seed),
                  "update": 0, "settings": settings(method), "schedule": self.schedule,
                  "notes": hyperparameters(method, config), "tuning": tuning}
        self.validation = [SokobanFairnessEnv(split="validation", shard_index=i, shard_count=VALIDATION_ENVS,
                                              **common) for i in range(VALIDATION_ENVS)]
        self.learner = BY_NAME[method].build(common, seed, None if config is None else grid_point(config))
        self.passes: list[dict] = []  # {"update": nominal, "env_steps": actual, "wins": n}
        self.cpu_seconds = 0.0

    def validate(self, label: int) -> dict:
        """One greedy pass over the 256 boards, logged under ``label``."""
        envs, wins = self.validation, 0
        for env in envs:
            env.set_update(label)
        remaining = {i: len(range(i, len(env.rows), VALIDATION_ENVS)) for i, env in enumerate(envs)}
        observations = {i: envs[i].reset()[0] for i in remaining}
        while remaining:
            active = sorted(remaining)
            actions = self.learner.greedy(np.stack([observations[i] for i in active]))
            for i, action in zip(active, actions.tolist()):
                observations[i], _, terminated, truncated, info = envs[i].step(action)
                if terminated or truncated:
                    wins += bool(info["won"])
                    remaining[i] -= 1
                    if remaining[i]:
                        observations[i] = envs[i].reset()[0]
                    else:
                        del remaining[i]
        result = {"update": label, "env_steps": self.learner.env_steps, "wins": wins}
        self.passes.append(result)
        return result

    def state_dict(self, records: int) -> dict:
        import torch

        options = {**({"tuning": True} if self.tuning else {}),
                   **({"config": self.config} if self.config is not None else {})}  # a default run's as before
        return {"format": FORMAT, "method": self.method, "seed": self.seed, "steps": self.schedule.total,
                "every": self.schedule.every, **options, "records": records, "learner": self.learner.state_dict(),
                "validation": [env.state_dict() for env in self.validation], "passes": self.passes,
                "cpu_seconds": self.cpu_seconds, "rng": {"torch": torch.get_rng_state(),
                                                        "numpy": np.random.get_state(), "python": random.getstate()}}

    def load_state_dict(self, state: dict) -> None:
        import torch

        self.learner.load_state_dict(state["learner"])
        for env, saved in zip(self.validation, state["validation"]):
            env.load_state_dict(saved)
        self.passes, self.cpu_seconds = state["passes"], state["cpu_seconds"]
        torch.set_rng_state(state["rng"]["torch"])
        np.random.set_state(state["rng"]["numpy"])
        random.setstate(state["rng"]["python"])


def _seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train(method: str, seed: int, log: Path, steps: int, every: int, quiet: bool = False, tuning: bool = False,
          config: int | None = None) -> list[dict]:
    """Train (or continue) one run to its budget; returns its validation passes. ``tuning``: a tuning
    run (trained outside the tuning split, validated on it); ``config``: a tuning grid point's
    hyperparameters instead of the method's recipe's."""
    from tqdm import tqdm

    started_cpu = time.process_time()
    writer = episode_writer(log)  # the log's lock first: a run another process writes is refused before any read
    try:
        path = checkpoint_path(log)
        state = load_checkpoint(path, log, method, seed, steps, every, tuning, config) if path.exists() else None
        run = Run(method, seed, log, steps, every, tuning, config)  # writes (or checks) the manifest first
    except BaseException:
        writer.close()
        raise
    try:
        if state is not None:
            kept = iter(range(state["records"]))
            moved = writer.set_aside(f"resume-from-{state['learner']['env_steps']}",
                                     keep=lambda record: next(kept, None) is not None)  # the first records
            if moved is not None:
                print(moved.notice(log), file=sys.stderr)
            run.load_state_dict(state)
        elif log_records(log) or (log.exists() and log.stat().st_size):
            moved = writer.set_aside("restart")
            if moved is not None:
                print(moved.notice(log), file=sys.stderr)
        bar = tqdm(total=steps, initial=min(run.learner.env_steps, steps), unit="step", unit_scale=True,
                   disable=quiet, desc=f"{METHODS[method]} seed {seed}", mininterval=5, file=sys.stderr)

        def report(done: int) -> None:
            bar.update(min(done, steps) - bar.n)

        def announce(result: dict) -> None:
            line = (f"{METHODS[method]} seed {seed}: {PASS_NAME[tuning]} at {result['update']:,} env steps (actual "
                    f"{result['env_steps']:,}): {result['wins']}/256 = {result['wins'] / 256:.1%}")
            (bar.write if not quiet else print)(line)

        if not run.passes and run.schedule.before_training:
            announce(run.validate(0))
            save_checkpoint(run, started_cpu)
            started_cpu = time.process_time()
        for point in run.schedule.points():
            if point == 0 or any(p["update"] == point for p in run.passes):
                continue
            done = run.learner.env_steps
            run.learner.train_until(point, report)
            for due in run.schedule.due(done, run.learner.env_steps):
                if not any(p["update"] == due for p in run.passes):
                    announce(run.validate(due))
            save_checkpoint(run, started_cpu)
            started_cpu = time.process_time()
        bar.close()
        _record_costs(writer, run)
    finally:
        writer.close()
        for env in run.validation:
            env.close()
        run.learner.close()
    return run.passes


def _record_costs(writer: EpisodeWriter, run: Run) -> None:
    """The run's costs, once, when it has reached its budget: CPU-seconds and env steps trained, added
    to the manifest its environments wrote or checked through the log's ``writer``."""
    from ..records.budget import ENV_STEPS_COST, UNIT

    if ENV_STEPS_COST not in writer.manifest["costs"]:
        writer.add_costs({"cpu_seconds": ("CPU-seconds", run.cpu_seconds),
                          ENV_STEPS_COST: (UNIT, run.learner.env_steps)})


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m sokoban_tools train", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--method", choices=sorted(METHODS), required=True, help="the training method")
    parser.add_argument("--seed", type=int, required=True, help="seeds the network, the sampler and the sampling")
    parser.add_argument("--log", type=Path, required=True, help="the episode log (its manifest and checkpoint "
                                                                 "beside it)")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help=f"env steps of training (default "
                                                                          f"{DEFAULT_STEPS:,})")
    parser.add_argument("--eval-every", type=int, default=None, help="env steps between validation passes "
                                                                     "(default a tenth of --steps)")
    parser.add_argument("--publish", type=Path, default=None, metavar="DIR",
                        help="once the run is complete, write its validation passes and manifest to "
                             "DIR/<method>-<seed>.jsonl")
    parser.add_argument("--replace", action="store_true", help="let --publish write over an earlier publish of "
                                                                   "the same run")
    parser.add_argument("--tuning", action="store_true",
                        help=f"a tuning run: train on the training boards outside the tuning split "
                             f"({TUNING_SELECTION}) and validate on its {TUNING_SIZE} boards, never on "
                             f"the validation boards; score, compare and leaderboard refuse its log")
    parser.add_argument("--config", type=int, choices=range(len(GRID)), metavar=f"0-{len(GRID) - 1}",
                        help="train with this point of the tuning grid (learning rate, epochs, minibatch rows; "
                             "docs/training.md lists them) instead of the method's recipe's values")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.tuning and args.publish is not None:
        parser.error("--publish writes runs validated on the validation boards; a tuning run's log and manifest "
                     "are its record: leave out --publish")
    if not 0 <= args.seed < 2 ** 32:  # numpy's seeds
        parser.error(f"--seed must be between 0 and {2 ** 32 - 1}, got {args.seed}")
    if args.replace and args.publish is None:
        parser.error("--replace is for --publish DIR: give the folder to publish in")
    if args.steps < 1:
        parser.error("--steps must be 1 or more")
    every = args.eval_every if args.eval_every is not None else max(args.steps // 10, 1)
    if not 1 <= every <= args.steps:
        parser.error(f"--eval-every must be between 1 and --steps ({args.steps}), got {every}")
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        print("error: train needs stable-baselines3 and torch: pip install -e '.[train]'", file=sys.stderr)
        return 1
    if args.publish is not None:  # before training: a run must not train for hours to fail at its end
        problem = check_destination(args.log, args.publish, args.method, args.seed, args.replace)
        if problem:
            parser.error(problem)
    try:
        passes = train(args.method, args.seed, args.log, args.steps, every, args.quiet, args.tuning, args.config)
        published = publish(args.log, args.publish, args.method, args.seed, args.replace) if args.publish else None
    except (DataError, ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # LogInUse (another process writes the log), a full disk, a file size limit
        print(f"error: {os_error_line(err, 'run the same command: it continues from its last checkpoint')}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # one line, not torch's frames: the checkpoint makes stopping safe
        again = shlex.join(sys.argv[1:] if argv is None else argv)
        print(f"{'' if args.quiet else chr(10)}interrupted: the same command continues from the last validation pass's checkpoint: "
              f"python -m sokoban_tools train {again}", file=sys.stderr)
        return 130
    last = passes[-1]
    then = ("a tuning run: its log is no result to score" if args.tuning
            else f"score it with python -m sokoban_tools score {args.log}")
    print(f"trained {METHODS[args.method]} seed {args.seed} to {last['env_steps']:,} env steps; last "
          f"{PASS_NAME[args.tuning]} {last['wins']}/256; log {args.log} ({then})")
    if published is not None:
        print(f"published its validation passes as {published} and {manifest_path(published)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
