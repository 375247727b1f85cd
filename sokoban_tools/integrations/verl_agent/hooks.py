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

from typing import Iterator

from sokoban_published import PUBLISHED_FILES

from ...records.boards import board_source
from ...records.manifest import costs_from_verl_metrics
from ...layout import VALIDATION_DATA
from ...runtime.projection import sokoban_projection
from .envs import FairSokobanEnvs, build_sokoban_envs
from .resume import fair_run, open_run

VALIDATION_BOARDS = PUBLISHED_FILES[VALIDATION_DATA]["rows"]


def make_fair_envs(config, manager_class, resources_per_worker) -> tuple:
    """``make_envs(config)`` for ``env.fairness=true``: (training, validation) managers of
    ``manager_class`` (verl-agent's ``SokobanEnvironmentManager``) over the fair environments."""
    env = config.env
    if "sokoban" not in str(env.env_name).lower():
        raise ValueError(f"env.fairness=true plays the sokoban-fairness boards: set env.env_name=Sokoban "
                         f"(got {env.env_name!r}) or env.fairness=false")
    run = open_run(config, board_source(env.fairness_boards, env.fairness_revision))
    common = {
        "mode": env.sokoban.mode,
        "resources_per_worker": resources_per_worker,
        "env_kwargs": {"dim_room": list(env.sokoban.dim_room), "num_boxes": env.sokoban.num_boxes,
                       "max_steps": env.max_steps, "search_depth": env.sokoban.search_depth},
        "dataset_dir": env.fairness_boards,
        "hub_revision": env.fairness_revision,
        "method": str(env.fairness_method),
        "run": str(env.fairness_run),
        "episode_log": run.log,
    }
    run.training = build_sokoban_envs(env.seed, config.data.train_batch_size, max(env.rollout.n, 1),
                                      is_train=True, **common)
    run.validation = build_sokoban_envs(env.seed + 1000, validation_workers(config.data.val_batch_size), 1,
                                        is_train=False, **common)
    managers = (manager_class(run.training, sokoban_projection, config),
                manager_class(run.validation, sokoban_projection, config))
    for manager in managers:
        manager.fair_run = run  # what the checkpoint hooks of .resume work with
    return managers


def validation_workers(val_batch_size: int | None) -> int:
    """The validation environments for ``data.val_batch_size``: the largest count up to it that
    divides the validation boards, so every chunk of a pass is full and verl-agent's
    per-batch success rates average to the pass's (``None``: all boards at once)."""
    if val_batch_size is None:
        return VALIDATION_BOARDS
    if isinstance(val_batch_size, bool) or not isinstance(val_batch_size, int) or val_batch_size < 1:
        raise ValueError(f"data.val_batch_size must be a positive integer or null, got {val_batch_size!r}")
    return max(n for n in range(1, min(val_batch_size, VALIDATION_BOARDS) + 1) if VALIDATION_BOARDS % n == 0)


def validation_batches(dataloader, val_envs, update: int) -> Iterator:
    """The batches ``_validate`` plays in one call: one per validation chunk, each with a
    row per environment, made by ``dataloader.collate_fn`` from the Parquet rows in order
    (repeated as needed: they only size the batch). The pass begins with the first batch,
    labelled ``update`` (the trainer's ``global_steps``), and ends after the last, when
    the open episodes are recorded; every board's record is then in the log."""
    envs: FairSokobanEnvs = val_envs.envs
    chunks = envs.begin_pass(update)
    rows = dataloader.dataset
    for chunk in range(chunks):
        first = chunk * envs.num_processes
        yield dataloader.collate_fn([rows[(first + i) % len(rows)] for i in range(envs.num_processes)])
    envs.end_pass()


def label_training_update(envs, global_steps: int) -> None:
    """Label the episodes of the coming training rollout with the trainer's ``global_steps``."""
    if isinstance(global_steps, bool) or not isinstance(global_steps, int) or global_steps < 0:
        raise ValueError(f"global_steps must be a non-negative integer, got {global_steps!r}")
    envs.envs.label_updates(global_steps)


def record_costs(envs, metrics, gpus: int) -> None:
    """Add one training step's costs, from the trainer's ``metrics`` (its ``timing_s/*``
    timings, in GPU-seconds over its ``gpus``, and its token count), to the run
    manifest beside the episode log; nothing without a log."""
    fair_run(envs).add_costs(costs_from_verl_metrics(metrics, gpus))

