"""Train PPO, GRPO or GiGPO on the 5,000 training boards and validate on the 256.

    python -m sokoban_tools train --method ppo|grpo|gigpo --seed S --log LOG
                                  [--steps N] [--eval-every N] [--publish DIR] [--quiet]

One network, one budget and one schedule for every method: stable-baselines3's
``ActorCriticPolicy`` (two layers of 256, tanh) over the one-hot grid observation of
``SokobanFairness-v1``, ``--steps`` env steps of training, a greedy validation pass over
all 256 boards before training, every ``--eval-every`` env steps and after the last.
The episode log ``LOG`` holds every training episode and every validation pass, its run
manifest beside it (every setting, the hyperparameters and where they came from, the
costs); ``LOG.checkpoint`` is written after every pass. A run started again on its log
continues from its checkpoint: the records written after it are set aside (kept beside
the log, see :func:`sokoban_tools.records.episodes.set_aside`) and played again, so the
log holds each record once and, the run being deterministic (one torch thread, every
generator seeded and checkpointed), the same bytes as a run never stopped. ``--publish DIR``,
once the run has reached its budget, writes ``DIR/<method>-<seed>.jsonl``: the log's
validation passes, line for line, with the manifest beside it (the training rows, 20-30 MB a
run of 1M steps, stay in the log); the runs under ``examples/training`` are these.

Hyperparameters, identical across methods where they apply, chosen without the
validation boards: stable-baselines3 2.9.2's PPO defaults (learning rate 3e-4, 10 epochs,
minibatches of 64, clip 0.2, gradient norm 0.5, no entropy bonus; for PPO, gamma 0.99,
GAE 0.95, value coefficient 0.5), its 2,048-step rollout split over 8 environments;
for GRPO and GiGPO the group of verl-agent's Sokoban scripts (``env.rollout.n`` 8) over
16 boards an update (about the rollout's size), and for GiGPO the step weight 1.0 and
discount 0.95 of verl-agent's Sokoban GiGPO script.
"""

from __future__ import annotations

import argparse
import io
import random
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from ..files import write_atomic
from ..help_text import Parser
from ..records.episodes import episode_writer, iter_episodes
from ..records.manifest import add_costs, manifest_path, read_manifest
from ..records.rows import DataError

METHODS = {"ppo": "PPO", "grpo": "GRPO", "gigpo": "GiGPO"}
DEFAULT_STEPS = 1_000_000  # the committed runs' budget: `train --method ppo --seed 0` plays ppo-0 again
VALIDATION_ENVS = 16
NETWORK = [256, 256]
SHARED = {"learning_rate": 3e-4, "n_epochs": 10, "batch_size": 64, "clip_range": 0.2, "max_grad_norm": 0.5,
          "ent_coef": 0.0}
PPO_ONLY = {"n_steps": 256, "gamma": 0.99, "gae_lambda": 0.95, "vf_coef": 0.5}
PPO_ENVS = 8
GROUPS = {"boards": 16, "group_size": 8}
GIGPO = {"step_weight": 1.0, "gamma": 0.95}
CHOSEN = ("stable-baselines3 2.9.2's PPO defaults (its 2,048-step rollout as 8 environments x 256 steps); "
          "the group of verl-agent's Sokoban scripts (env.rollout.n=8) over 16 boards an update; GiGPO's step "
          "weight 1.0 and discount 0.95 from verl-agent's Sokoban GiGPO script; none tuned, and never on the "
          "validation boards")
CHECKPOINT = ".checkpoint"
FORMAT = "sokoban-fairness training checkpoint 1"


def checkpoint_path(log: Path) -> Path:
    return log.with_name(log.name + CHECKPOINT)


def hyperparameters(method: str) -> dict:
    """What the manifest's notes record of the learner."""
    values = {"network": f"stable-baselines3 ActorCriticPolicy, net_arch {NETWORK}, tanh", **SHARED}
    if method == "ppo":
        values.update(PPO_ONLY, n_envs=PPO_ENVS)
    else:
        values.update(GROUPS, advantage="GRPO: episode return normalised within its group (mean, std)")
        if method == "gigpo":
            values.update(GIGPO, step_advantage="discounted returns of identical states within the group, "
                                                "normalised among them (mean, std); a state seen once: 0")
    return {"method": METHODS[method], "hyperparameters": values, "chosen": CHOSEN,
            "validation": "greedy (the most probable action), all 256 boards once a pass"}


def settings(method: str) -> dict:
    """The controlled settings the learner states (the environment states its own)."""
    grouped = method != "ppo"
    return {"initial_weights.model": f"MLP {NETWORK} (random initialisation seeded by the run)",
            "reward.invalid_action_penalty": False,
            "rollout.group_size": GROUPS["group_size"] if grouped else None,
            "update_budget.groups_per_update": GROUPS["boards"] if grouped else None,
            "decoding.training.temperature": 1.0, "decoding.training.top_p": 1.0, "decoding.training.top_k": -1,
            "decoding.training.do_sample": True, "decoding.training.n": GROUPS["group_size"] if grouped else 1,
            "decoding.validation.do_sample": False, "decoding.validation.n": 1}


class Run:
    """One run's learner, validation environments, schedule and log."""

    def __init__(self, method: str, seed: int, log: Path, steps: int, every: int):
        import torch

        from ..integrations.gymnasium_env.env import SokobanFairnessEnv
        from ..records.budget import StepSchedule

        self.method, self.seed, self.log = method, seed, log
        self.schedule = StepSchedule(steps, every)
        torch.set_num_threads(1)
        _seed_everything(seed)
        common = {"observation": "grid", "episode_log": log, "method": METHODS[method], "run": str(seed),
                  "update": 0, "settings": settings(method), "schedule": self.schedule,
                  "notes": hyperparameters(method)}
        self.validation = [SokobanFairnessEnv(split="validation", shard_index=i, shard_count=VALIDATION_ENVS,
                                              **common) for i in range(VALIDATION_ENVS)]
        if method == "ppo":
            from ..integrations.gymnasium_env.sb3 import make_sb3_vec
            from .ppo import PPOLearner

            envs = make_sb3_vec(PPO_ENVS, seed, split="train", **common)
            self.learner = PPOLearner(envs, {**SHARED, **PPO_ONLY}, {"net_arch": NETWORK}, seed)
        else:
            from stable_baselines3.common.policies import ActorCriticPolicy

            from .grpo import GroupLearner, GroupSettings

            count = GROUPS["boards"] * GROUPS["group_size"]
            envs = [SokobanFairnessEnv(split="train", batch_size=GROUPS["boards"], rollout_n=GROUPS["group_size"],
                                       shard_index=i, shard_count=count, **common) for i in range(count)]
            policy = ActorCriticPolicy(envs[0].observation_space, envs[0].action_space,
                                       lambda _: SHARED["learning_rate"], net_arch=NETWORK)
            group = GroupSettings(GROUPS["boards"], GROUPS["group_size"], SHARED["n_epochs"], SHARED["batch_size"],
                                  SHARED["learning_rate"], SHARED["clip_range"], SHARED["max_grad_norm"],
                                  SHARED["ent_coef"], **(GIGPO if method == "gigpo" else {}))
            self.learner = GroupLearner(policy, envs, group, seed)
        self.passes: list[dict] = []  # {"update": nominal, "env_steps": actual, "wins": n}
        self.cpu_seconds = 0.0

    def validate(self, label: int) -> dict:
        """One greedy pass over the 256 boards, logged under ``label``."""
        import torch

        policy = self.learner.policy
        envs, wins = self.validation, 0
        for env in envs:
            env.set_update(label)
        remaining = {i: len(range(i, len(env.rows), VALIDATION_ENVS)) for i, env in enumerate(envs)}
        observations = {i: envs[i].reset()[0] for i in remaining}
        while remaining:
            active = sorted(remaining)
            with torch.no_grad():
                actions, _ = policy.predict(np.stack([observations[i] for i in active]), deterministic=True)
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

        return {"format": FORMAT, "method": self.method, "seed": self.seed, "steps": self.schedule.total,
                "every": self.schedule.every, "records": records, "learner": self.learner.state_dict(),
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


def _records(log: Path) -> int:
    """The complete lines of the log (a torn last line is not a record)."""
    return log.read_bytes().count(b"\n") if log.exists() else 0


def save_checkpoint(run: Run, started_cpu: float) -> None:
    import torch

    run.cpu_seconds += time.process_time() - started_cpu
    buffer = io.BytesIO()
    torch.save(run.state_dict(_records(run.log)), buffer)
    write_atomic(checkpoint_path(run.log), buffer.getvalue())


def load_checkpoint(path: Path, method: str, seed: int, steps: int, every: int) -> dict:
    import torch

    state = torch.load(path, weights_only=False)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise DataError(f"{path}: not a training checkpoint of this version; move it away to start the run again")
    asked = {"method": method, "seed": seed, "steps": steps, "every": every}
    differ = [key for key, value in asked.items() if state[key] != value]
    if differ:
        saved = ", ".join(f"--{'eval-every' if k == 'every' else k} {state[k]}" for k in differ)
        raise DataError(f"{path}: the checkpoint is of a run with {saved}; run it with those, or give this run "
                        f"another --log")
    return state


def train(method: str, seed: int, log: Path, steps: int, every: int, quiet: bool = False) -> list[dict]:
    """Train (or continue) one run to its budget; returns its validation passes."""
    from tqdm import tqdm

    started_cpu = time.process_time()
    path = checkpoint_path(log)
    state = load_checkpoint(path, method, seed, steps, every) if path.exists() else None
    run = Run(method, seed, log, steps, every)  # writes (or checks) the manifest before any record
    writer = episode_writer(log)
    try:
        if state is not None:
            kept = iter(range(state["records"]))
            moved = writer.set_aside(f"resume-from-{_steps_of(state)}",
                                     keep=lambda record: next(kept, None) is not None)  # the first records
            if moved is not None:
                print(moved.notice(log), file=sys.stderr)
            run.load_state_dict(state)
        elif _records(log) or (log.exists() and log.stat().st_size):
            moved = writer.set_aside("restart")
            if moved is not None:
                print(moved.notice(log), file=sys.stderr)
        bar = tqdm(total=steps, initial=min(run.learner.env_steps, steps), unit="step", unit_scale=True,
                   disable=quiet, desc=f"{METHODS[method]} seed {seed}", mininterval=5, file=sys.stderr)

        def report(done: int) -> None:
            bar.update(min(done, steps) - bar.n)

        def announce(result: dict) -> None:
            line = (f"{METHODS[method]} seed {seed}: validation at {result['update']:,} env steps (actual "
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
            if method == "ppo":
                run.learner.train_until(point, report)
            else:
                while run.learner.env_steps < point:
                    run.learner.update()
                    report(run.learner.env_steps)
            for due in run.schedule.due(done, run.learner.env_steps):
                if not any(p["update"] == due for p in run.passes):
                    announce(run.validate(due))
            save_checkpoint(run, started_cpu)
            started_cpu = time.process_time()
        bar.close()
    finally:
        writer.close()
        for env in run.validation:
            env.close()
        _close_learner(run)
    _record_costs(log, run)
    return run.passes


def _steps_of(state: dict) -> int:
    learner = state["learner"]
    return learner.get("num_timesteps", learner.get("env_steps", 0))


def _close_learner(run: Run) -> None:
    envs = run.learner.envs
    for env in envs.envs if hasattr(envs, "envs") else envs:
        env.close()


def _record_costs(log: Path, run: Run) -> None:
    """The run's costs, once, when it has reached its budget: CPU-seconds and env steps trained."""
    from ..records.budget import ENV_STEPS_COST, UNIT

    manifest = read_manifest(manifest_path(log))
    if ENV_STEPS_COST not in manifest["costs"]:
        add_costs(log, {"cpu_seconds": ("CPU-seconds", run.cpu_seconds),
                        ENV_STEPS_COST: (UNIT, run.learner.env_steps)})


def published_name(method: str, seed: int) -> str:
    """The file name ``--publish`` gives a run, and the committed runs have."""
    return f"{method}-{seed}.jsonl"


def publish(log: Path, folder: Path, method: str, seed: int) -> Path:
    """Write ``folder/<method>-<seed>.jsonl``, the validation rows of the finished run ``log`` in
    their order, and its manifest beside it; both are read and checked before either is written."""
    from ..records.budget import ENV_STEPS_COST

    manifest = manifest_path(log)
    if ENV_STEPS_COST not in read_manifest(manifest)["costs"]:
        raise DataError(f"{manifest}: the run has not reached its budget (no {ENV_STEPS_COST} cost yet); run the "
                        f"same train command to finish it, then publish")
    fix = "move the log away and train the run again"
    lines = "".join(record.to_line() + "\n" for record in iter_episodes(log, fix) if record.phase == "validation")
    manifest_bytes = manifest.read_bytes()
    out = folder / published_name(method, seed)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(out, lines.encode("utf-8"))
    write_atomic(manifest_path(out), manifest_bytes)
    return out


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
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.seed < 0:
        parser.error("--seed must be 0 or more")
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
    try:
        passes = train(args.method, args.seed, args.log, args.steps, every, args.quiet)
        published = publish(args.log, args.publish, args.method, args.seed) if args.publish else None
    except (DataError, ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # one line, not torch's frames: the checkpoint makes stopping safe
        again = shlex.join(sys.argv[1:] if argv is None else argv)
        print(f"{'' if args.quiet else chr(10)}interrupted: the same command continues from the last validation pass's checkpoint: "
              f"python -m sokoban_tools train {again}", file=sys.stderr)
        return 130
    last = passes[-1]
    print(f"trained {METHODS[args.method]} seed {args.seed} to {last['env_steps']:,} env steps; last validation "
          f"{last['wins']}/256; log {args.log} (score it with python -m sokoban_tools score {args.log})")
    if published is not None:
        print(f"published its validation passes as {published} and {manifest_path(published)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
