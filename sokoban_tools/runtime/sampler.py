"""Which stored boards the environment workers play: fairly, reproducibly, separately.

Training (:class:`TrainingSampler`)
    For each update, ``batch_size`` tasks are drawn from the training pool
    without replacement, so no board appears twice in one update; draws of
    different updates are independent. Each drawn task is repeated
    ``rollout_n`` times (verl-agent's ``env.rollout.n``) with its copies
    adjacent, so worker ``g * rollout_n + k`` plays copy ``k`` of group ``g``
    and a GRPO/CPAD group shares its board. All randomness comes from the
    sampler's own ``numpy.random.Generator``, seeded explicitly; the global RNGs
    of ``random`` and ``numpy`` are never read or written.

    The sampler belongs to the trainer process, not to the environment
    workers, so it survives in-process worker releases. Its state can be saved
    and restored (:meth:`TrainingSampler.state_dict`,
    :meth:`TrainingSampler.from_state_dict`, or pickling); the verl-agent patch
    saves it with each checkpoint and restores it on resumption
    (:mod:`sokoban_tools.integrations.verl_agent.resume`), so a resumed run
    continues the draws of the run it resumes.

    A saved state names what it continues: the pool's digest, the settings, the
    seed, the number of updates drawn and ``draws_sha256``, a digest chained
    over all of these and every update's draws. Restoring replays the draws
    from the seed and refuses a state they do not reproduce (another seed's,
    a rewound count, an altered generator), since its draws would continue
    one run while the records name another.

Validation (:func:`validation_chunks`)
    Every validation board once, in stored order, cut into chunks of the worker
    count: with 256 boards and 128 workers, two chunks of 128. Validation uses
    no randomness and shares nothing with the training sampler, so validating
    never advances (or otherwise changes) the training draws.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..checks import integer

STATE_FORMAT = "sokoban-fairness-training-sampler-v1"
STATE_KEYS = ("format", "pool_size", "pool_sha256", "batch_size", "rollout_n", "seed",
              "updates_drawn", "draws_sha256", "bit_generator")
GENERATOR = "PCG64"
# Restoring replays every update drawn (about 10 us each, 70 us for a batch of the whole pool):
# a state claiming more than any run makes (a trainer's update takes seconds) is refused before
# the replay, instead of replaying for hours.
MAX_UPDATES_DRAWN = 100_000


def _frozen_indices(values) -> np.ndarray:
    array = np.asarray(values, dtype=np.int64)
    array.flags.writeable = False
    return array


def _checked_ids(task_ids: Sequence[str]) -> tuple[str, ...]:
    ids = tuple(task_ids)
    if not ids:
        raise ValueError("the task pool is empty")
    if len(set(ids)) != len(ids):
        raise ValueError("task IDs must be unique")
    return ids


def _pool_digest(ids: tuple[str, ...]) -> str:
    """SHA-256 of the task IDs in order, one per line; ties a saved state to its pool."""
    return hashlib.sha256("".join(f"{i}\n" for i in ids).encode("utf-8")).hexdigest()


def _chained(digest: str, data: bytes) -> str:
    """The next link of ``draws_sha256``: SHA-256 of the previous digest and ``data``."""
    return hashlib.sha256(digest.encode("ascii") + data).hexdigest()


def _generator_state(state) -> dict:
    """``state`` if it looks like a saved PCG64 state; a ValueError saying what it is otherwise."""
    if not isinstance(state, dict) or state.get("bit_generator") != GENERATOR:
        found = state.get("bit_generator") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"the state's bit_generator must be the {GENERATOR} state state_dict() saves, "
                         f"got {found!r}")
    return state


@dataclass(frozen=True, eq=False)
class TrainingBatch:
    """The tasks of one training update, one entry per environment worker.

    ``update``: ``int``, 0-based number of the update.

    ``task_indices``: ``np.ndarray`` of shape (batch_size * rollout_n,), dtype
    ``int64``, read-only; positions in the sampler's task pool. Entries
    ``g * rollout_n`` to ``(g + 1) * rollout_n - 1`` hold group ``g``'s task.

    ``task_ids``: ``tuple[str, ...]`` of the same length, the same tasks by ID.

    ``rollout_n``: ``int``, copies of each task (the group size).
    """

    update: int
    task_indices: np.ndarray
    task_ids: tuple[str, ...]
    rollout_n: int

    @property
    def group_task_indices(self) -> np.ndarray:
        """The distinct tasks of the update, one per group: (batch_size,) int64."""
        return self.task_indices[:: self.rollout_n]


class TrainingSampler:
    """Draws each update's tasks from the training pool; see the module docstring.

    ``task_ids`` is the pool in stored order (the 5,000 training task IDs);
    ``batch_size`` tasks are drawn per update (at most the pool size), each
    played ``rollout_n`` times; ``seed`` (a non-negative int, required) seeds
    the sampler's private PCG64 generator.
    """

    def __init__(self, task_ids: Sequence[str], batch_size: int, rollout_n: int, seed: int):
        self._ids = _checked_ids(task_ids)
        self.batch_size = integer("batch_size", batch_size, 1)
        if self.batch_size > len(self._ids):
            raise ValueError(
                f"batch_size must be between 1 and the pool size {len(self._ids)} "
                f"(no board twice in one update), got {batch_size}"
            )
        self.rollout_n = integer("rollout_n", rollout_n, 1)
        self.seed = integer("seed", seed, 0)
        self._rng = np.random.Generator(np.random.PCG64(self.seed))
        self._updates = 0
        identity = f"{STATE_FORMAT}|{_pool_digest(self._ids)}|{self.batch_size}|{self.rollout_n}|{self.seed}"
        self._draws_sha256 = _chained("", identity.encode("utf-8"))

    @property
    def task_ids(self) -> tuple[str, ...]:
        return self._ids

    @property
    def updates_drawn(self) -> int:
        """How many batches have been drawn; the next batch's ``update``."""
        return self._updates

    def _draw(self) -> np.ndarray:
        """The next update's distinct tasks (pool positions), advancing the generator,
        the count and the digest."""
        chosen = self._rng.choice(len(self._ids), size=self.batch_size, replace=False)
        self._draws_sha256 = _chained(self._draws_sha256, chosen.astype("<i8").tobytes())
        self._updates += 1
        return chosen

    def next_batch(self) -> TrainingBatch:
        """Draw the next update's tasks and advance the sampler."""
        update = self._updates
        chosen = self._draw()
        indices = _frozen_indices(np.repeat(chosen, self.rollout_n))
        return TrainingBatch(
            update=update,
            task_indices=indices,
            task_ids=tuple(self._ids[i] for i in indices),
            rollout_n=self.rollout_n,
        )

    def state_dict(self) -> dict:
        """A JSON-serialisable snapshot from which :meth:`from_state_dict` continues
        the same draws (the verl-agent patch keeps it with each checkpoint)."""
        return {
            "format": STATE_FORMAT,
            "pool_size": len(self._ids),
            "pool_sha256": _pool_digest(self._ids),
            "batch_size": self.batch_size,
            "rollout_n": self.rollout_n,
            "seed": self.seed,
            "updates_drawn": self._updates,
            "draws_sha256": self._draws_sha256,
            "bit_generator": self._rng.bit_generator.state,
        }

    @classmethod
    def from_state_dict(cls, task_ids: Sequence[str], state: dict, seed: int | None = None) -> "TrainingSampler":
        """A sampler over ``task_ids`` continuing from ``state``, which must replay from
        its seed: a ValueError names what does not match (the pool, ``seed`` when
        given, the generator, ``updates_drawn``, ``draws_sha256``). Replaying repeats
        every draw made so far, a fraction of a millisecond each over 5,000 boards."""
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            found = state.get("format") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"not a training-sampler state (format {found!r}, expected {STATE_FORMAT!r})")
        missing = [key for key in STATE_KEYS if key not in state]
        if missing:
            raise ValueError(f"the training-sampler state lacks {', '.join(missing)}; save it again "
                             f"with TrainingSampler.state_dict()")
        sampler = cls(task_ids, state["batch_size"], state["rollout_n"], state["seed"])
        if state["pool_size"] != len(sampler._ids) or state["pool_sha256"] != _pool_digest(sampler._ids):
            raise ValueError(
                f"the state was saved over a different task pool ({state['pool_size']!r} tasks, "
                f"IDs sha256 {str(state['pool_sha256'])[:12]}) than the one given "
                f"({len(sampler._ids)} tasks, {_pool_digest(sampler._ids)[:12]})"
            )
        if seed is not None and integer("seed", seed, 0) != sampler.seed:
            raise ValueError(f"the state continues the draws of seed {sampler.seed}, but seed={seed} was given; "
                             f"give the seed the run started with, or start without the state")
        saved = _generator_state(state["bit_generator"])
        updates = integer("updates_drawn", state["updates_drawn"], 0)
        if updates > MAX_UPDATES_DRAWN:
            raise ValueError(f"the state's updates_drawn is {updates}, more than a run makes (restoring replays "
                             f"at most {MAX_UPDATES_DRAWN:,} updates); it was altered after state_dict() saved it")
        sampler._replay(updates, saved)
        if state["draws_sha256"] != sampler._draws_sha256:
            raise ValueError(f"the state's draws_sha256 {state['draws_sha256']!r} is not the digest of seed "
                             f"{sampler.seed}'s first {updates} updates with these settings "
                             f"({sampler._draws_sha256}); it was altered after state_dict() saved it")
        return sampler

    def _replay(self, updates: int, saved: dict) -> None:
        """Draw ``updates`` batches from the seed; a ValueError unless the generator then
        is in the ``saved`` state, naming the count it is found at if it is a few draws off."""
        for _ in range(updates):
            self._draw()
        if self._rng.bit_generator.state == saved:
            return
        probe = TrainingSampler(self._ids, self.batch_size, self.rollout_n, self.seed)
        for drawn in range(2 * updates + 100):
            if probe._rng.bit_generator.state == saved:
                raise ValueError(f"the state's updates_drawn is {updates}, but its generator is where seed "
                                 f"{self.seed} is after {drawn} updates; restore a state as state_dict() "
                                 f"saved it, not parts of two")
            probe._draw()
        raise ValueError(f"the state's generator is not where seed {self.seed} is after {updates} updates "
                         f"(nor within {2 * updates + 100} updates): it is another seed's or was altered")


@dataclass(frozen=True, eq=False)
class ValidationChunk:
    """One round of validation: the next ``len(task_ids)`` boards, one per worker.

    ``index``: ``int``, 0-based chunk number.

    ``start``: ``int``, position of the chunk's first task in stored order.

    ``task_indices``: ``np.ndarray`` of shape (k,), dtype ``int64``, read-only,
    ``start`` to ``start + k - 1``; k is the worker count except possibly in
    the last chunk.

    ``task_ids``: ``tuple[str, ...]`` of length k, the same tasks by ID.
    """

    index: int
    start: int
    task_indices: np.ndarray
    task_ids: tuple[str, ...]


def validation_chunks(task_ids: Sequence[str], workers: int) -> list[ValidationChunk]:
    """All validation tasks once each, in stored order, in chunks of ``workers``.

    With 256 validation boards and 128 workers this is two chunks of 128. When
    the worker count does not divide the pool, the last chunk is shorter and
    its spare workers idle. Deterministic; uses no RNG.
    """
    ids = _checked_ids(task_ids)
    workers = integer("workers", workers, 1)
    return [
        ValidationChunk(
            index=number,
            start=start,
            task_indices=_frozen_indices(range(start, min(start + workers, len(ids)))),
            task_ids=ids[start : start + workers],
        )
        for number, start in enumerate(range(0, len(ids), workers))
    ]
