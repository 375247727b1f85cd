"""Drop-in replacement for verl-agent's Sokoban ``build_sokoban_envs``, playing the stored boards fairly.

verl-agent builds its Sokoban environments with
``build_sokoban_envs(seed, env_num, group_n, mode, resources_per_worker, is_train, env_kwargs)``
from ``agent_system/environments/env_package/sokoban``; :func:`build_sokoban_envs`
here takes the same arguments (plus keyword-only fairness options) and returns an
object with the same surface: ``mode``, ``reset() -> (obs_list, info_list)``,
``step(actions) -> (obs_list, reward_list, done_list, info_list)``,
``render(mode='rgb_array', env_idx=None)`` and ``close()``, all lists of length
``env_num * group_n`` in environment order. Each environment is a
:class:`sokoban_tools.runtime.env.FairSokobanEnv`, which behaves step for step like the
original; where they run is :mod:`sokoban_tools.runtime.workers` (Ray actors holding
several environments each, shared by the training and validation environments of one
:class:`~sokoban_tools.runtime.workers.WorkerPool`, restored step-exact when lost). The
workers send back positions, and this process draws the observations and renders from
them, with the environment's own :func:`sokoban_tools.runtime.env.render`.

What differs is where boards come from, decided in the driver process, never in a
worker (a worker receives a :class:`Board` and nothing else: no seed, solution or
length), by :mod:`sokoban_tools.runtime.schedule`:

* training (``is_train=True``): each ``reset()`` is one update's draw of
  :class:`sokoban_tools.runtime.sampler.TrainingSampler`: ``env_num`` distinct boards of
  ``fairness/train.jsonl``, without replacement, from a private RNG seeded with
  ``seed``, each played by ``group_n`` adjacent environments. The sampler lives in
  the driver, so releasing the workers (``close()``) and resetting again, or
  rebuilding from :meth:`FairSokobanEnvs.sampler_state`, continues the same draws;
* validation (``is_train=False``): the 256 boards of ``fairness/evaluation.jsonl``
  in stored order, ``env_num`` per ``reset()`` (two chunks with 128 environments).
  ``num_chunks`` resets make one pass, bracketed by :meth:`FairSokobanEnvs.begin_pass`
  and :meth:`FairSokobanEnvs.end_pass`: a reset past the last chunk is refused,
  ``end_pass`` refuses an incomplete pass, and every pass after the first needs
  ``begin_pass``. Validation uses no RNG and never touches a training sampler.

Every episode's outcome is an :class:`sokoban_tools.records.episodes.EpisodeRecord`,
appended to ``episode_log`` through the process's one writer of that log
(:func:`sokoban_tools.records.episodes.episode_writer`) and then forgotten, so memory
does not grow with the updates; without a log it is kept for
:meth:`FairSokobanEnvs.take_episodes`.
An episode ends at its first ``done`` (later steps are ignored, as the trainer
masks them) or, if it never reports ``done``, at the next ``reset()``,
``end_pass()``, ``end_episodes()`` or ``close()``, or when the other phase's ``reset()``
takes the workers.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from ...layout import TRAIN_DATA, VALIDATION_DATA
from ...records.rows import BoardRow
from ...rules.board import Board
from ...records.boards import load_boards
from ...checks import integer
from ...runtime.config import DEFAULT_MAX_RESTARTS, RuntimeConfig, runtime_config
from ...runtime.env import ACTION_CHOICES, checked_mode, is_action, render
from ...records.episodes import EpisodeRecord, episode_writer
from ...runtime.recovery import Episode
from ...runtime.schedule import TrainingSchedule, ValidationSchedule
from ...runtime import workers as worker_pool

DEFAULT_RESOURCES = MappingProxyType({"num_cpus": 0.1})


class FairSokobanEnvs:
    """The object :func:`build_sokoban_envs` returns; see the module docstring."""

    def __init__(self, rows: list[BoardRow], file_sha256: str, config: RuntimeConfig,
                 pool: worker_pool.WorkerPool | None = None):
        self.config = config
        self._pool = worker_pool.SHARED if pool is None else pool
        self.mode = config.mode
        self.is_train = config.is_train
        self.env_num, self.group_n = config.env_num, config.group_n
        self.num_processes = config.num_envs
        self._rows = rows
        self._sha256 = file_sha256
        ids = [row.task_id for row in rows]
        if config.is_train:
            self._schedule = TrainingSchedule(ids, config.env_num, config.group_n, config.seed, config.sampler_state)
        else:
            self._schedule = ValidationSchedule(ids, config.env_num)
        self._envs_per_actor = config.envs_per_actor or worker_pool.DEFAULT_ENVS_PER_ACTOR
        if config.backend == "ray":
            self._envs_per_actor = worker_pool.ray_actor_size(config.resources, config.envs_per_actor,
                                                              self.num_processes)
        self._workers: worker_pool.Workers | None = None
        self._episodes: list[Episode] = []
        self._writer = None if config.episode_log is None else episode_writer(config.episode_log)
        self._finished: list[EpisodeRecord] = []  # only without a log: records are not kept once written
        self._next_label: int | None = None  # label_updates(): the update the next training reset plays
        self._start_workers()

    # --- verl-agent's interface -------------------------------------------------------------

    def reset(self):
        """Start the next episode on every environment: the next training update's draw, or the
        next validation chunk. Returns ``(obs_list, info_list)``."""
        self._end_episodes()
        self._start_workers()
        positions, update = self._schedule.next_reset()
        if self.is_train and self._next_label is not None:
            update = self._next_label
        self._pool.lease(self._workers, self)
        self._episodes = [Episode(p, self._rows[p].task_id, update, self._rows[p].board, self.config.max_steps)
                          for p in positions]
        results = self._workers.reset(self._episodes)
        return self._observations(results), [info for _, info in results]

    def step(self, actions):
        """One action per environment (0-4); returns ``(obs_list, reward_list, done_list, info_list)``."""
        actions = self._checked_actions(actions)
        self._require_episodes()
        results = self._workers.step(actions)
        observations = self._observations(results)
        finished = []
        for episode, action, (_, reward, done, info) in zip(self._episodes, actions, results):
            if episode.ended:
                continue
            episode.tally.add(action, reward, done, info["won"])
            if done:
                finished.append(episode)
        self._record(finished)
        _, rewards, dones, infos = map(list, zip(*results))
        return observations, rewards, dones, infos

    def render(self, mode: str = "rgb_array", env_idx: int | None = None):
        """Every environment's current position in ``mode`` (a list), or environment ``env_idx``'s alone."""
        checked_mode(mode, "render mode")  # before the state check: a wrong mode is wrong in any state
        self._require_episodes("render")
        if env_idx is None:
            return [render(episode.board, mode) for episode in self._episodes]
        return render(self._episodes[self._checked_index(env_idx)].board, mode)

    def close(self) -> None:
        """Record the open episodes and release the workers, which this process's training and
        validation environments share (the other's open episodes end too). The driver's state
        (the training sampler, the validation position) stays, so a later ``reset()`` starts
        new workers and carries on exactly where a run without the release would be."""
        self._end_episodes()
        self._episodes = []
        if self._workers is not None and self._pool.is_live(self._workers):
            self._pool.release(self._workers)
        self._workers = None

    # --- fairness -----------------------------------------------------------------------------

    @property
    def workers(self) -> worker_pool.Workers | None:
        """The live workers this object uses (shared with the other phase), ``None`` once released."""
        return self._workers if self._workers is not None and self._pool.is_live(self._workers) else None

    @property
    def task_ids(self) -> list[str]:
        """The board each environment plays in the current episode (driver-side; workers never see it)."""
        return [episode.task_id for episode in self._episodes]

    def label_updates(self, update: int) -> None:
        """Label the episodes the next training ``reset()`` starts with ``update`` (the
        trainer's step) instead of the sampler's count, which a resumed or dynamically
        sampling trainer does not follow."""
        self._training("label_updates")
        self._next_label = integer("update", update, 0)

    def restore_sampler(self, state: dict) -> None:
        """Continue the training draws of a saved :meth:`sampler_state` (a checkpoint's), in
        place of this sampler's; refused (``ValueError``) unless it replays from this run's
        seed over these boards with these settings."""
        schedule = self._training("restore_sampler")
        self._schedule = TrainingSchedule(schedule.sampler.task_ids, self.env_num, self.group_n, self.config.seed,
                                          state)

    def end_episodes(self) -> None:
        """Record the open episodes now, as ``close()`` does but keeping the workers: the
        trainer's rollout is over (before a checkpoint, at the end of the run)."""
        self._end_episodes()

    def sampler_state(self) -> dict:
        """The training sampler's state (JSON-serialisable): pass it as ``sampler_state`` to
        :func:`build_sokoban_envs` to continue the same draws, e.g. after resuming a checkpoint."""
        return self._training("sampler_state").sampler.state_dict()

    @property
    def num_chunks(self) -> int:
        """Resets per validation pass: the validation boards divided by ``env_num``."""
        return self._validation("num_chunks").num_chunks

    @property
    def chunks_played(self) -> int:
        """Validation chunks started in the current pass (``num_chunks`` when it is fully played)."""
        return self._validation("chunks_played").chunks_played

    @property
    def passes_completed(self) -> int:
        return self._validation("passes_completed").passes_completed

    @property
    def validation_update(self) -> int:
        """The training update the current validation pass is labelled with."""
        return self._validation("validation_update").update

    def begin_pass(self, update: int = 0) -> int:
        """Start a validation pass, labelling its episode records with the training ``update``
        at which it runs (0 before training); returns ``num_chunks``, the resets it takes. A
        fully played pass not yet ended is ended first (its records stay in the log and in
        :meth:`take_episodes`)."""
        schedule = self._validation("begin_pass")
        update = integer("update", update, 0)
        if schedule.chunks_played and schedule.chunks_played == schedule.num_chunks:
            self.end_pass()
        return schedule.begin_pass(update)

    def end_pass(self) -> list[EpisodeRecord]:
        """End a fully played validation pass: record its open episodes and return its
        records, one per validation board, in stored order."""
        schedule = self._validation("end_pass")
        schedule.require_complete()
        self._end_episodes()
        if self._writer is not None:
            self._writer.sync()  # the pass is in the log: on disk, where a resume will count it
        return schedule.end_pass()

    def take_episodes(self) -> list[EpisodeRecord]:
        """The episode records finished since the last call (and forget them); always empty
        with an episode log, where they are written instead of kept."""
        taken, self._finished = self._finished, []
        return taken

    def workers_taken(self) -> None:
        """Called when the other phase's ``reset()`` takes the shared workers: this phase's open
        episodes end here, as at ``close()``."""
        self._end_episodes()

    # --- internals ----------------------------------------------------------------------------

    def _training(self, name: str) -> TrainingSchedule:
        if not self.is_train:
            raise ValueError(f"{name} is for training environments; validation uses no sampler")
        return self._schedule

    def _validation(self, name: str) -> ValidationSchedule:
        if self.is_train:
            raise ValueError(f"{name} is a validation property; training resets draw from the sampler")
        return self._schedule

    def _start_workers(self) -> None:
        config = self.config
        self._workers = self._pool.workers(config.backend, config.resources, self._envs_per_actor,
                                           config.max_restarts, self.num_processes)

    def _require_episodes(self, what: str = "step") -> None:
        if not self._episodes or self.workers is None or self._workers.holder is not self:
            raise RuntimeError(f"nothing to {what}: call reset() first (a close(), or the other phase's "
                               f"reset(), which takes the shared workers, ends this phase's episodes)")

    def _observations(self, results: list) -> list:
        """Move each episode's board to the position its worker reports, and draw it in ``mode``."""
        for episode, ((player, box), *_) in zip(self._episodes, results):
            episode.board = Board(episode.board.room_fixed, player, box)
        return [render(episode.board, self.mode) for episode in self._episodes]

    def _checked_index(self, env_idx) -> int:
        return integer("env_idx (a worker index)", env_idx, 0, self.num_processes - 1)

    def _checked_actions(self, actions) -> list[int]:
        actions = list(actions)
        if len(actions) != self.num_processes:
            raise ValueError(f"step takes one action per worker: expected {self.num_processes}, got {len(actions)}")
        for index, action in enumerate(actions):
            if not is_action(action):
                raise ValueError(f"worker {index}: action must be an integer, one of {ACTION_CHOICES}; "
                                 f"got {action!r}")
        return [int(action) for action in actions]

    def _end_episodes(self) -> None:
        self._record([episode for episode in self._episodes if not episode.ended])

    def _record(self, episodes: list[Episode]) -> None:
        records = []
        for episode in episodes:
            episode.ended = True
            record = episode.tally.record(self.config.method, self.config.run, self.config.phase, episode.update,
                                          episode.task_id, None if self.is_train else self._sha256)
            records.append(record)
            if not self.is_train:
                self._schedule.record(episode.position, record)
        if self._writer is None:
            self._finished += records
        elif records:
            self._writer.append(records)


def build_sokoban_envs(
        seed=0,
        env_num=1,
        group_n=1,
        mode="rgb_array",
        resources_per_worker=DEFAULT_RESOURCES,
        is_train=True,
        env_kwargs=None,
        *,
        dataset_dir: Path | str | None = None,
        hub_revision: str | None = None,
        method: str = "unnamed",
        run: str | None = None,
        episode_log: Path | str | None = None,
        sampler_state: dict | None = None,
        backend: str = "ray",
        envs_per_actor: int | None = None,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        pool: worker_pool.WorkerPool | None = None,
) -> FairSokobanEnvs:
    """verl-agent's ``build_sokoban_envs``, fair: see the module docstring.

    The first seven parameters are verl-agent's (``resources_per_worker``: Ray
    resources per environment; ``env_kwargs``: ``dim_room``, ``num_boxes``,
    ``max_steps``, ``search_depth``; only the stored boards' 6x6 / one box /
    search depth 30 are accepted). Keyword-only: ``dataset_dir`` (a local copy of the
    dataset repository) or ``hub_revision`` (a Hub revision to download from), by
    default the clone or the pinned release (:mod:`sokoban_tools.records.boards`); ``method`` and ``run`` label the episode records (``run``
    defaults to ``"seed<seed>"``); ``episode_log``, a JSONL file the records are
    appended to; ``sampler_state`` from :meth:`FairSokobanEnvs.sampler_state` to
    continue a training sampler; ``backend``, ``"ray"`` (actors) or ``"local"``
    (in-process); ``envs_per_actor``, environments per Ray actor (default: up to
    32, as many as the largest node can hold); ``max_restarts``, how often a lost
    actor is restarted and its environments rebuilt before the run fails; ``pool``, the
    :class:`sokoban_tools.runtime.workers.WorkerPool` whose workers the environments share with
    the other phase's (default: the process's).

    Every argument is checked before a board is read or a worker started
    (``TypeError``/``ValueError`` naming it), and so is the Ray cluster's room.
    """
    config = runtime_config(
        seed, env_num, group_n, mode, resources_per_worker, is_train, env_kwargs, method=method, run=run,
        episode_log=episode_log, sampler_state=sampler_state, backend=backend, envs_per_actor=envs_per_actor,
        max_restarts=max_restarts)
    rows, sha256 = load_boards(TRAIN_DATA if is_train else VALIDATION_DATA, dataset_dir, hub_revision)
    return FairSokobanEnvs(rows, sha256, config, pool)
