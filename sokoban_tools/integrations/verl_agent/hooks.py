"""What the patched verl-agent calls when ``env.fairness=true``: one function per function it changes.

The patch (``sokoban_tools/integrations/verl_agent/``) only wires these in, so what a fair run
does is decided and tested here:

* ``make_envs`` returns :func:`make_fair_envs`: the drop-in environments
  (:func:`sokoban_tools.integrations.verl_agent.envs.build_sokoban_envs`) for training and
  validation, the boards from ``env.fairness_boards`` or ``env.fairness_revision``,
  episode records labelled ``env.fairness_method`` / ``env.fairness_run`` and appended
  to ``env.fairness_log``, with :func:`sokoban_tools.runtime.projection.sokoban_projection`;
* ``RayPPOTrainer._validate`` loops over :func:`validation_batches`: exactly one pass
  over the validation boards per call, whatever the Parquet's rows and
  ``data.val_batch_size``, every board's record in the log;
* ``RayPPOTrainer.fit`` calls :func:`label_training_update` before each rollout, so
  training records carry the trainer's ``global_steps`` as their update, the number
  validation records carry too, and :func:`record_costs` once the step's metrics are
  in, so its timings join the costs of the run manifest beside the log;
* checkpoints, resumes, restarts and the run's end call :mod:`.resume`.

:func:`make_fair_envs` writes that manifest (:mod:`sokoban_tools.records.manifest`)
from the composed config before any worker starts (:func:`.resume.open_run`): the
controlled settings ``compare`` checks before it compares two runs, and where the
boards came from. Both phases' records reach the log through its one writer.

Nothing here imports verl, torch, gym or gym_sokoban: the trainer's objects are used
through the attributes verl-agent gives them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from sokoban_published import PUBLISHED_FILES

from sokoban_published import check_published_file

from ...records.manifest import check_fits, costs_from_verl_metrics, manifest_from_verl_config, manifest_path
from ...layout import TRAIN_DATA, VALIDATION_DATA
from ...paths import unwritable
from ...records.boards import board_file, board_source
from ...checks import integer
from ...runtime.config import DEFAULT_MAX_RESTARTS, check_sizes, runtime_config
from ...runtime.env import checked_mode
from ...runtime.projection import sokoban_projection
from ...runtime.workers import WorkerPool
from .envs import FairSokobanEnvs, build_sokoban_envs
from .resume import fair_run, open_run

VALIDATION_BOARDS = PUBLISHED_FILES[VALIDATION_DATA]["rows"]


def make_fair_envs(config, manager_class, resources_per_worker) -> tuple:
    """``make_envs(config)`` for ``env.fairness=true``: (training, validation) managers of
    ``manager_class`` (verl-agent's ``SokobanEnvironmentManager``) over the fair environments,
    which share one pool of workers."""
    checked = check_fair_config(config, resources_per_worker)
    run = open_run(checked.episode_log, checked.manifest)
    common = {**checked.common, "pool": WorkerPool(), "episode_log": run.log}
    run.training, run.validation = (build_sokoban_envs(seed, env_num, group_n, is_train=is_train, **common)
                                    for seed, env_num, group_n, is_train in checked.phases)
    managers = (manager_class(run.training, sokoban_projection, config),
                manager_class(run.validation, sokoban_projection, config))
    for manager in managers:
        manager.fair_run = run  # what the checkpoint hooks of .resume work with
    return managers


@dataclass(frozen=True)
class FairConfig:
    """What :func:`check_fair_config` found right in a composed config."""

    common: dict  # build_sokoban_envs's arguments both phases share
    phases: tuple  # (seed, env_num, group_n, is_train) of the training phase, then of validation
    episode_log: Path | None
    manifest: dict | None  # the run manifest to write beside the log


def check_fair_config(config, resources_per_worker) -> FairConfig:
    """Every ``env.fairness`` setting of the composed ``config`` checked before anything is
    written or started: a wrong one is refused in one line naming its key (``ValueError``,
    ``TypeError``, or the board files' own errors), and a refused run leaves no manifest
    or folder behind to block the corrected one."""
    env = config.env
    if "sokoban" not in str(env.env_name).lower():
        raise ValueError(f"env.fairness=true plays the sokoban-fairness boards: set env.env_name=Sokoban "
                         f"(got {env.env_name!r}) or env.fairness=false")
    boards, revision = env.fairness_boards, env.fairness_revision
    if boards is not None and (not isinstance(boards, str) or not boards.strip()):
        raise ValueError(f"env.fairness_boards must name a local copy of the dataset repository (a folder), or be "
                         f"null to use the Hub; got {boards!r}")
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        raise ValueError(f"env.fairness_revision must name a Hub tag, branch or commit of the boards, or be null; "
                         f"got {revision!r}")
    if boards is not None and revision is not None:
        raise ValueError("set env.fairness_boards (a local copy) or env.fairness_revision (a Hub revision), "
                         "not both")
    labels = {}
    for key in ("fairness_method", "fairness_run"):
        value = getattr(env, key)
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise ValueError(f"env.{key} labels every episode record: set it to a non-empty name "
                             f"(e.g. env.{key}=grpo), got {value!r}")
        labels[key] = str(value)
    seed = integer("env.seed", env.seed, 0)
    batch, group_n = check_sizes(config.data.train_batch_size, max(integer("env.rollout.n", env.rollout.n, 0), 1),
                                 ("data.train_batch_size", "env.rollout.n"))
    validation_envs = validation_workers(config.data.val_batch_size)
    common = {
        "mode": checked_mode(env.sokoban.mode, "env.sokoban.mode"),
        "resources_per_worker": resources_per_worker,
        "env_kwargs": {"dim_room": env.sokoban.dim_room, "num_boxes": env.sokoban.num_boxes,
                       "max_steps": env.max_steps, "search_depth": env.sokoban.search_depth},
        "dataset_dir": boards,
        "hub_revision": revision,
        "method": labels["fairness_method"],
        "run": labels["fairness_run"],
    }
    phases = ((seed, batch, group_n, True), (seed + 1000, validation_envs, 1, False))
    for phase_seed, env_num, copies, is_train in phases:
        runtime_config(phase_seed, env_num, copies, common["mode"], resources_per_worker, is_train, common["env_kwargs"],
                       method=common["method"], run=common["run"], episode_log=None, sampler_state=None,
                       backend="ray", envs_per_actor=None, max_restarts=DEFAULT_MAX_RESTARTS)
        name = TRAIN_DATA if is_train else VALIDATION_DATA
        check_published_file(board_file(name, boards, revision), name)
    episode_log = None if env.fairness_log is None else fair_log(env.fairness_log)
    manifest = None
    if episode_log is not None:
        manifest = manifest_from_verl_config(config, method=labels["fairness_method"],
                                             boards=board_source(boards, revision))
        check_fits(episode_log, manifest, torn_ok=True)  # a torn one is set aside by open_run
    return FairConfig(common, phases, episode_log, manifest)


def fair_log(value) -> Path:
    """``env.fairness_log`` as a path the records and their manifest can be written to (its
    folder may be new), and not another run's records without a manifest."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"env.fairness_log must name the episode log file (a .jsonl path), or be null for no "
                         f"log; got {value!r}")
    log = Path(value)
    for path in (log, manifest_path(log)):
        problem = unwritable(path, "env.fairness_log")
        if problem:
            raise ValueError(f"env.fairness_log {problem}")
    if log.exists() and log.stat().st_size and not manifest_path(log).exists():
        # Judgement call (issue 28): records without a manifest are another run's; adopting them would
        # put this run's settings over records it did not make.
        raise ValueError(f"env.fairness_log {log}: holds episode records but no manifest "
                         f"({manifest_path(log).name}), so they are another run's, which this run would claim; "
                         f"give this run its own log (env.fairness_log) or move {log.name} aside")
    return log


def validation_workers(val_batch_size: int | None) -> int:
    """The validation environments for ``data.val_batch_size``: the largest count up to it that
    divides the validation boards, so every chunk of a pass is full and verl-agent's
    per-batch success rates average to the pass's (``None``: all boards at once)."""
    if val_batch_size is None:
        return VALIDATION_BOARDS
    val_batch_size = integer("data.val_batch_size (or null)", val_batch_size, 1)
    return max(n for n in range(1, min(val_batch_size, VALIDATION_BOARDS) + 1) if VALIDATION_BOARDS % n == 0)


def validation_batches(dataloader, val_envs, update: int) -> Iterator:
    """The batches ``_validate`` plays in one call: one per validation chunk, each with a
    row per environment, made by ``dataloader.collate_fn`` from the Parquet rows in order
    (repeated as needed: they only size the batch). The pass begins with the first batch,
    labelled ``update`` (the trainer's ``global_steps``), and ends after the last, when
    the open episodes are recorded; every board's record is then in the log. The dataloader
    and the update are checked here, before a batch is made."""
    rows = getattr(dataloader, "dataset", None)
    if rows is None or not callable(getattr(dataloader, "collate_fn", None)):
        raise TypeError(f"the validation dataloader must be a DataLoader with a dataset and a collate_fn "
                        f"(verl-agent's val_dataloader), got {type(dataloader).__name__}")
    if not hasattr(rows, "__len__") or not hasattr(rows, "__getitem__"):
        raise TypeError(f"the validation dataloader's dataset must be sized and indexable (verl-agent's "
                        f"RLHFDataset of the validation Parquet), got {type(rows).__name__}")
    if not len(rows):
        raise ValueError("the validation dataset is empty: its rows size the batches, so data.val_files must "
                         "hold at least one row")
    envs: FairSokobanEnvs = getattr(val_envs, "envs", None)
    if not isinstance(envs, FairSokobanEnvs) or envs.is_train:
        raise TypeError(f"validation_batches takes the validation environment manager (make_envs' second), "
                        f"got one over {type(envs).__name__}")
    chunks = envs.begin_pass(update)
    return _batches(dataloader, rows, envs, chunks)


def _batches(dataloader, rows, envs: FairSokobanEnvs, chunks: int) -> Iterator:
    for chunk in range(chunks):
        first = chunk * envs.num_processes
        yield dataloader.collate_fn([rows[(first + i) % len(rows)] for i in range(envs.num_processes)])
    envs.end_pass()


def label_training_update(envs, global_steps: int) -> None:
    """Label the episodes of the coming training rollout with the trainer's ``global_steps``."""
    global_steps = integer("global_steps", global_steps, 0)
    inner = getattr(envs, "envs", None)
    if not isinstance(inner, FairSokobanEnvs) or not inner.is_train:
        raise TypeError(f"label_training_update takes the training environment manager (make_envs' first), "
                        f"got one over {type(inner).__name__}")
    inner.label_updates(global_steps)


def record_costs(envs, metrics, gpus: int) -> None:
    """Add one training step's costs, from the trainer's ``metrics`` (its ``timing_s/*``
    timings, in GPU-seconds over its ``gpus``, and its token count), to the run
    manifest beside the episode log; nothing without a log."""
    fair_run(envs).add_costs(costs_from_verl_metrics(metrics, gpus))

