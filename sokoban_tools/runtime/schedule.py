"""Which stored board each environment plays at each reset: the driver's schedules.

:class:`TrainingSchedule`: each reset is the next update's draw of the
:class:`~sokoban_tools.runtime.sampler.TrainingSampler`. :class:`ValidationSchedule`:
the validation boards in stored order, ``env_num`` per reset, exactly one pass
between :meth:`~ValidationSchedule.begin_pass` and :meth:`~ValidationSchedule.end_pass`:
a reset past the last chunk is refused, never a silent second pass. Both live in
the driver process, so releasing or losing workers changes no draw.
"""

from __future__ import annotations

from typing import Sequence

from ..records.episodes import EpisodeRecord
from ..checks import integer
from .sampler import TrainingSampler, validation_chunks


class TrainingSchedule:
    """One update's draw per reset; ``sampler_state`` continues a saved sampler."""

    def __init__(self, task_ids: Sequence[str], env_num: int, group_n: int, seed: int, sampler_state: dict | None):
        if sampler_state is None:
            self.sampler = TrainingSampler(task_ids, env_num, group_n, seed)
        else:
            self.sampler = TrainingSampler.from_state_dict(task_ids, sampler_state, seed=seed)
            if (self.sampler.batch_size, self.sampler.rollout_n) != (env_num, group_n):
                raise ValueError(
                    f"sampler_state draws {self.sampler.batch_size} boards x {self.sampler.rollout_n} "
                    f"copies, but env_num={env_num} and group_n={group_n}")

    def next_reset(self) -> tuple[list[int], int]:
        """The board positions of the next update, grouped, and its update number."""
        batch = self.sampler.next_batch()
        return [int(i) for i in batch.task_indices], batch.update


class ValidationSchedule:
    """The validation boards in chunks of ``env_num``, one pass at a time."""

    def __init__(self, task_ids: Sequence[str], env_num: int):
        if len(task_ids) % env_num:
            raise ValueError(
                f"validation env_num={env_num} does not divide the {len(task_ids)} validation boards, so "
                f"some workers would have no board; use a divisor such as data.val_batch_size=128")
        self._chunks = validation_chunks(task_ids, env_num)
        self.chunks_played = 0
        self.passes_completed = 0
        self.update = 0
        self._begun = False
        self._records: list[tuple[int, EpisodeRecord]] = []
        self._validated: set[int] = set()  # the updates of the passes ended

    @property
    def num_chunks(self) -> int:
        return len(self._chunks)

    def begin_pass(self, update: int) -> int:
        """Start a pass labelled with the training ``update``; returns ``num_chunks``. The
        previous pass must have been ended (:meth:`end_pass`)."""
        update = integer("update", update, 0)
        if update in self._validated:
            raise RuntimeError(f"update {update} was validated already: a second pass labelled {update} would "
                               f"repeat its records, and the log would no longer score; validate each "
                               f"update once")
        if self.chunks_played:
            raise RuntimeError(f"the current validation pass stopped after chunk {self.chunks_played} of "
                               f"{self.num_chunks}; finish it (reset() and play) and end_pass() before "
                               f"beginning another")
        self.update, self._begun = update, True
        return self.num_chunks

    def next_reset(self) -> tuple[list[int], int]:
        """The board positions of the pass's next chunk and the pass's update. The first pass
        may start without ``begin_pass`` (update 0, before training); every later one needs it."""
        if not self._begun and self.passes_completed:
            raise RuntimeError(f"validation pass {self.passes_completed + 1} was not begun: call "
                               f"begin_pass(update) before its first reset()")
        if self.chunks_played == self.num_chunks:
            raise RuntimeError(f"reset() past the last of the {self.num_chunks} chunks of this validation pass: a "
                               f"pass plays every board once; call end_pass(), then begin_pass(update) for another")
        self._begun = True
        chunk = self._chunks[self.chunks_played]
        self.chunks_played += 1
        return [int(i) for i in chunk.task_indices], self.update

    def record(self, position: int, record: EpisodeRecord) -> None:
        """Keep a finished episode of this pass for :meth:`end_pass`."""
        self._records.append((position, record))

    def require_complete(self) -> None:
        if self.chunks_played != self.num_chunks:
            raise RuntimeError(
                f"validation pass incomplete: {self.chunks_played} of {self.num_chunks} chunks played; "
                f"the validation loop must reset and play num_chunks={self.num_chunks} times per pass")

    def end_pass(self) -> list[EpisodeRecord]:
        """The complete pass's records in stored order (the caller records its open episodes first)."""
        self.require_complete()
        records = [record for _, record in sorted(self._records, key=lambda item: item[0])]
        self._records, self.chunks_played, self._begun = [], 0, False
        self._validated.add(self.update)
        self.passes_completed += 1
        return records
