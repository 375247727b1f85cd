"""Drop-in replacement for verl-agent's Sokoban ``build_sokoban_envs``, playing the stored boards fairly.

verl-agent builds its Sokoban environments with
``build_sokoban_envs(seed, env_num, group_n, mode, resources_per_worker, is_train, env_kwargs)``
from ``agent_system/environments/env_package/sokoban``; :func:`build_sokoban_envs`
here takes the same arguments (plus keyword-only fairness options) and returns an
object with the same surface: ``mode``, ``reset() -> (obs_list, info_list)``,
``step(actions) -> (obs_list, reward_list, done_list, info_list)``,
``render(mode='rgb_array', env_idx=None)`` and ``close()``, all lists of length
``env_num * group_n`` in worker order. Each worker is a Ray actor running one
:class:`sokoban_tools.runtime.env.FairSokobanEnv`, which behaves step for step like the
original environment.

What differs is where boards come from, decided in the driver process, never in a
worker (a worker receives a :class:`Board` and nothing else: no seed, solution or
length):

* training (``is_train=True``): each ``reset()`` is one update's draw of
  :class:`sokoban_tools.runtime.sampler.TrainingSampler`: ``env_num`` distinct boards of
  ``fairness/train.jsonl``, without replacement, from a private RNG seeded with
  ``seed``, each played by ``group_n`` adjacent workers. The sampler lives in
  the driver, so releasing the actors (``close()``) and resetting again, or
  rebuilding from :meth:`FairSokobanEnvs.sampler_state`, continues the same draws;
* validation (``is_train=False``): the 256 boards of ``fairness/evaluation.jsonl``
  in stored order, ``env_num`` per ``reset()`` (two chunks with 128 workers).
  ``num_chunks`` resets make one pass; :meth:`FairSokobanEnvs.begin_pass` and
  :meth:`FairSokobanEnvs.end_pass` bracket it, and ``end_pass`` refuses an
  incomplete pass. Validation uses no RNG and never touches a training sampler.

Every episode's outcome is kept as an :class:`sokoban_tools.runtime.episodes.EpisodeRecord`
(:meth:`FairSokobanEnvs.take_episodes`, and appended to ``episode_log`` if given).
An episode ends at its first ``done`` (later steps are ignored, as the trainer
masks them) or, if it never reports ``done``, at the next ``reset()``,
``end_pass()`` or ``close()``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Sequence

from ..layout import TRAIN_DATA, VALIDATION_DATA
from ..protocol import DIM_ROOM, NUM_BOXES, SEARCH_DEPTH
from ..rows import BoardRow
from .boards import load_boards
from .env import ACTION_CHOICES, DEFAULT_MAX_STEPS, MODES, NO_ACTION, FairSokobanEnv, is_action
from .episodes import EpisodeRecord, append_episodes
from .sampler import TrainingSampler, validation_chunks

DEFAULT_RESOURCES = MappingProxyType({"num_cpus": 0.1})
FAIRNESS_SETTINGS = (
    f"env.sokoban.dim_room=[{DIM_ROOM[0]},{DIM_ROOM[1]}], "
    f"env.sokoban.num_boxes={NUM_BOXES}, env.sokoban.search_depth={SEARCH_DEPTH}"
)
ENV_KWARGS = ("dim_room", "num_boxes", "max_steps", "search_depth")


class WorkerError(RuntimeError):
    """A worker that died or failed, named by its index."""


# ---------------------------------------------------------------------------
# Workers: Ray actors, or in-process environments with the same interface
# ---------------------------------------------------------------------------

class RayWorkers:
    """``count`` Ray actors, each one :class:`FairSokobanEnv` (as verl-agent's ``SokobanWorker``)."""

    def __init__(self, count: int, mode: str, max_steps: int, resources: Mapping):
        import ray

        self._ray = ray
        if not ray.is_initialized():
            ray.init()
        actor_class = ray.remote(**dict(resources))(FairSokobanEnv)
        self.actors = [actor_class.remote(mode, max_steps) for _ in range(count)]

    def call(self, method: str, arguments: Sequence[tuple]) -> list:
        """``method(*arguments[i])`` on worker ``i`` for every ``i``, in parallel; results in order."""
        futures = [getattr(actor, method).remote(*args) for actor, args in zip(self.actors, arguments)]
        try:
            return self._ray.get(futures)  # one round trip for all: a third less per turn than one each
        except (self._ray.exceptions.RayActorError, self._ray.exceptions.RayTaskError):
            return [self._get(index, method, future) for index, future in enumerate(futures)]  # names the worker

    def call_one(self, index: int, method: str, *args):
        """``method(*args)`` on worker ``index`` alone."""
        return self._get(index, method, getattr(self.actors[index], method).remote(*args))

    def _get(self, index: int, method: str, future):
        try:
            return self._ray.get(future)
        except self._ray.exceptions.RayActorError as err:
            raise WorkerError(f"worker {index} (a Ray actor) died: {err}. close() and reset() start new "
                              f"workers; the driver's sampler carries on") from None
        except self._ray.exceptions.RayTaskError as err:
            raise WorkerError(f"worker {index} failed in {method}: {err.cause!r}") from err.cause

    def close(self, timeout: float = 60.0) -> None:
        """Kill every actor and return once each is gone: a kill is asynchronous, and a
        trainer that builds validation workers next must get the CPUs back."""
        for actor in self.actors:
            self._ray.kill(actor)
        deadline = time.monotonic() + timeout
        for index, actor in enumerate(self.actors):
            while not self._is_gone(actor):
                if time.monotonic() > deadline:
                    raise WorkerError(f"worker {index} (a Ray actor) was killed but still answers after "
                                      f"{timeout:.0f} s")
                time.sleep(0.05)
        self.actors = []

    def _is_gone(self, actor) -> bool:
        try:
            self._ray.get(actor.render.remote("state"), timeout=5)
        except self._ray.exceptions.RayActorError:
            return True
        except (self._ray.exceptions.RayTaskError, self._ray.exceptions.GetTimeoutError):
            pass  # alive (no episode to render yet) or busy
        return False


class LocalWorkers:
    """The same interface with the environments in this process: for debugging, and for
    exercising the driver at full size (128 workers) without 128 processes."""

    def __init__(self, count: int, mode: str, max_steps: int, resources: Mapping = DEFAULT_RESOURCES):
        self.envs = [FairSokobanEnv(mode, max_steps) for _ in range(count)]

    def call(self, method: str, arguments: Sequence[tuple]) -> list:
        return [self.call_one(index, method, *args) for index, args in enumerate(arguments)]

    def call_one(self, index: int, method: str, *args):
        try:
            return getattr(self.envs[index], method)(*args)
        except Exception as err:
            raise WorkerError(f"worker {index} failed in {method}: {err!r}") from err

    def close(self) -> None:
        self.envs = []


BACKENDS = {"ray": RayWorkers, "local": LocalWorkers}


# ---------------------------------------------------------------------------
# Boards and settings
# ---------------------------------------------------------------------------

def check_env_kwargs(env_kwargs: Mapping | None) -> int:
    """Refuse settings other than the stored boards'; return ``max_steps`` (default 15)."""
    env_kwargs = dict(env_kwargs or {})
    unknown = sorted(set(env_kwargs) - set(ENV_KWARGS))
    if unknown:
        raise ValueError(f"env_kwargs has unknown keys {unknown}; expected some of {list(ENV_KWARGS)}")
    wanted = {"dim_room": DIM_ROOM, "num_boxes": NUM_BOXES, "search_depth": SEARCH_DEPTH}
    for key, value in wanted.items():
        given = env_kwargs.get(key, value)
        # dim_room comes as a list, a tuple or the trainer config's list type
        comparable = tuple(given) if key == "dim_room" and not isinstance(given, (str, bytes, int)) else given
        if comparable != value:
            raise ValueError(f"env_kwargs {key}={given!r} is not a setting of the stored boards: the fairness "
                             f"boards need {FAIRNESS_SETTINGS} (set them in the trainer's config)")
    max_steps = env_kwargs.get("max_steps", DEFAULT_MAX_STEPS)
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"env_kwargs max_steps must be a positive integer (env.max_steps), got {max_steps!r}")
    return max_steps


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


# ---------------------------------------------------------------------------
# Episode outcomes
# ---------------------------------------------------------------------------

@dataclass
class _Episode:
    """What the driver knows of one worker's current episode."""

    position: int  # the board's position in its file
    task_id: str
    update: int
    actions: int = 0
    total: float = 0.0
    won: bool = False
    ended: bool = False


class FairSokobanEnvs:
    """The object :func:`build_sokoban_envs` returns; see the module docstring."""

    def __init__(self, rows: list[BoardRow], file_sha256: str, *, seed: int, env_num: int, group_n: int,
                 mode: str, is_train: bool, max_steps: int, resources: Mapping, backend: str,
                 method: str, run: str, episode_log: Path | str | None, sampler_state: dict | None):
        self.mode = mode
        self.is_train = is_train
        self.env_num, self.group_n = env_num, group_n
        self.num_processes = env_num * group_n
        self._rows = rows
        self._boards = [row.board for row in rows]
        self._sha256 = file_sha256
        self._method, self._run = method, run
        self._episode_log = episode_log
        self._max_steps, self._resources, self._backend = max_steps, resources, backend
        ids = [row.task_id for row in rows]
        if is_train:
            if sampler_state is None:
                self._sampler = TrainingSampler(ids, env_num, group_n, seed)
            else:
                self._sampler = TrainingSampler.from_state_dict(ids, sampler_state)
                if (self._sampler.batch_size, self._sampler.rollout_n) != (env_num, group_n):
                    raise ValueError(
                        f"sampler_state draws {self._sampler.batch_size} boards x {self._sampler.rollout_n} "
                        f"copies, but env_num={env_num} and group_n={group_n}")
        else:
            if sampler_state is not None:
                raise ValueError("sampler_state is for training environments; validation uses no sampler")
            if group_n != 1:
                raise ValueError(f"validation plays each board once: group_n must be 1, got {group_n}")
            if len(rows) % env_num:
                raise ValueError(
                    f"validation env_num={env_num} does not divide the {len(rows)} validation boards, so "
                    f"some workers would have no board; use a divisor such as data.val_batch_size=128")
            self._chunks = validation_chunks(ids, env_num)
            self._chunks_played = 0
            self.passes_completed = 0
            self.validation_update = 0
            self._pass_records: list[tuple[int, EpisodeRecord]] = []
        self.workers: RayWorkers | LocalWorkers | None = None  # None while released by close()
        self._episodes: list[_Episode] = []
        self._finished: list[EpisodeRecord] = []
        self._start_workers()

    # --- verl-agent's interface -------------------------------------------------------------

    def reset(self):
        """Start the next episode on every worker: the next training update's draw, or the
        next validation chunk. Returns ``(obs_list, info_list)``."""
        self._end_episodes()
        if self.workers is None:
            self._start_workers()
        if self.is_train:
            batch = self._sampler.next_batch()
            positions, update = [int(i) for i in batch.task_indices], batch.update
        else:
            if self._chunks_played == self.num_chunks:
                self.end_pass()
            chunk = self._chunks[self._chunks_played]
            positions, update = [int(i) for i in chunk.task_indices], self.validation_update
            self._chunks_played += 1
        self._episodes = [_Episode(p, self._rows[p].task_id, update) for p in positions]
        results = self.workers.call("reset", [(self._boards[p],) for p in positions])
        return [obs for obs, _ in results], [info for _, info in results]

    def step(self, actions):
        """One action per worker (0-4); returns ``(obs_list, reward_list, done_list, info_list)``."""
        actions = self._checked_actions(actions)
        if not self._episodes:
            raise RuntimeError("no episodes yet: call reset() first")
        results = self.workers.call("step", [(action,) for action in actions])
        finished = []
        for episode, action, (_, reward, done, info) in zip(self._episodes, actions, results):
            if episode.ended:
                continue
            episode.total += reward
            episode.actions += action != NO_ACTION
            if done:
                episode.won = bool(info["won"])
                finished.append(episode)
        self._record(finished)
        obs, rewards, dones, infos = ([result[k] for result in results] for k in range(4))
        return obs, rewards, dones, infos

    def render(self, mode: str = "rgb_array", env_idx: int | None = None):
        """Every worker's current position in ``mode`` (a list), or worker ``env_idx``'s alone."""
        if mode not in MODES:
            raise ValueError(f"render mode must be one of {', '.join(MODES)}; got {mode!r}")
        if self.workers is None or not self._episodes:
            raise RuntimeError("nothing to render: call reset() first")
        if env_idx is None:
            return self.workers.call("render", [(mode,)] * self.num_processes)
        if isinstance(env_idx, bool) or not isinstance(env_idx, int) or not 0 <= env_idx < self.num_processes:
            raise ValueError(f"env_idx must be a worker index 0-{self.num_processes - 1}, got {env_idx!r}")
        return self.workers.call_one(env_idx, "render", mode)

    def close(self) -> None:
        """Record the open episodes and release every worker. The driver's state (the training
        sampler, the validation position) stays, so a later ``reset()`` starts new workers and
        carries on exactly where a run without the release would be."""
        self._end_episodes()
        self._episodes = []
        if self.workers is not None:
            self.workers.close()
            self.workers = None

    # --- fairness -----------------------------------------------------------------------------

    @property
    def task_ids(self) -> list[str]:
        """The board each worker plays in the current episode (driver-side; workers never see it)."""
        return [episode.task_id for episode in self._episodes]

    def sampler_state(self) -> dict:
        """The training sampler's state (JSON-serialisable): pass it as ``sampler_state`` to
        :func:`build_sokoban_envs` to continue the same draws, e.g. after resuming a checkpoint."""
        if not self.is_train:
            raise ValueError("validation environments have no sampler")
        return self._sampler.state_dict()

    @property
    def num_chunks(self) -> int:
        """Resets per validation pass: the validation boards divided by ``env_num``."""
        if self.is_train:
            raise ValueError("num_chunks is a validation property; training resets draw from the sampler")
        return len(self._chunks)

    @property
    def chunks_played(self) -> int:
        """Validation chunks started in the current pass (``num_chunks`` when it is fully played)."""
        self.num_chunks  # refuses training environments
        return self._chunks_played

    def begin_pass(self, update: int = 0) -> int:
        """Start a validation pass, labelling its episode records with the training ``update``
        at which it runs (0 before training); returns ``num_chunks``, the resets it takes."""
        if self.chunks_played not in (0, self.num_chunks):
            raise RuntimeError(f"the current validation pass stopped after chunk {self._chunks_played} of "
                               f"{self.num_chunks}; finish it (reset() and play) before beginning another")
        if self._chunks_played:
            self.end_pass()
        if isinstance(update, bool) or not isinstance(update, int) or update < 0:
            raise ValueError(f"update must be a non-negative integer, got {update!r}")
        self.validation_update = update
        return self.num_chunks

    def end_pass(self) -> list[EpisodeRecord]:
        """End a fully played validation pass: record its open episodes and return its
        records, one per validation board, in stored order."""
        if self.chunks_played != self.num_chunks:
            raise RuntimeError(
                f"validation pass incomplete: {self._chunks_played} of {self.num_chunks} chunks played; "
                f"the validation loop must reset and play num_chunks={self.num_chunks} times per pass")
        self._end_episodes()
        records = [record for _, record in sorted(self._pass_records, key=lambda item: item[0])]
        self._pass_records, self._chunks_played = [], 0
        self.passes_completed += 1
        return records

    def take_episodes(self) -> list[EpisodeRecord]:
        """The episode records finished since the last call (and forget them)."""
        taken, self._finished = self._finished, []
        return taken

    # --- internals ----------------------------------------------------------------------------

    def _start_workers(self) -> None:
        self.workers = BACKENDS[self._backend](self.num_processes, self.mode, self._max_steps, self._resources)

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

    def _record(self, episodes: list[_Episode]) -> None:
        phase = "training" if self.is_train else "validation"
        records = []
        for episode in episodes:
            episode.ended = True
            record = EpisodeRecord(
                method=self._method, run=self._run, phase=phase, update=episode.update,
                task_id=episode.task_id, won=episode.won, actions=episode.actions,
                episode_return=episode.total, evaluation_sha256=None if self.is_train else self._sha256,
            )
            records.append(record)
            if not self.is_train:
                self._pass_records.append((episode.position, record))
        self._finished += records
        if self._episode_log is not None and records:
            append_episodes(self._episode_log, records)


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
) -> FairSokobanEnvs:
    """verl-agent's ``build_sokoban_envs``, fair: see the module docstring.

    The first seven parameters are verl-agent's (``env_kwargs``: ``dim_room``,
    ``num_boxes``, ``max_steps``, ``search_depth``; only the stored boards'
    6x6 / one box / search depth 30 are accepted). Keyword-only: ``dataset_dir``
    (a local copy of the dataset repository) or ``hub_revision`` (a Hub revision to
    download from), by default the clone or the pinned release
    (:mod:`sokoban_tools.runtime.boards`); ``method`` and ``run`` label the episode
    records (``run`` defaults to ``"seed<seed>"``); ``episode_log``, a JSONL file
    the records are appended to; ``sampler_state`` from
    :meth:`FairSokobanEnvs.sampler_state` to continue a training sampler;
    ``backend``, ``"ray"`` (actors) or ``"local"`` (in-process).
    """
    env_num, group_n = _positive("env_num", env_num), _positive("group_n", group_n)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    max_steps = check_env_kwargs(env_kwargs)
    name = TRAIN_DATA if is_train else VALIDATION_DATA
    rows, sha256 = load_boards(name, dataset_dir, hub_revision)
    return FairSokobanEnvs(
        rows, sha256, seed=seed, env_num=env_num, group_n=group_n, mode=mode, is_train=bool(is_train),
        max_steps=max_steps, resources=resources_per_worker, backend=backend, method=method,
        run=f"seed{seed}" if run is None else run, episode_log=episode_log, sampler_state=sampler_state,
    )
