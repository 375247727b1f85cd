"""Step-exact recovery of environments whose Ray actor was lost or restarted empty.

Every environment is deterministic and the driver chooses every board and every
action, so nothing a lost actor held is really lost: each environment's
:class:`Episode`, the driver's one record of it, keeps the board of its reset,
its horizon and every action sent since. Each slice of environments counts the
calls that changed it, and every call carries the count the driver expects. A
slice whose count differs, as an actor that Ray restarted empty does whenever it
died (during the call, or seconds earlier while the model generated), refuses the
call with :class:`StaleSlice` and changes nothing; an actor that dies during the
call fails it with Ray's ``RayActorError``. Either way the driver rebuilds each of
the slice's environments (its board reset, its actions replayed) and its count,
then makes the call again, at most the actor's ``max_restarts`` times. The
trainer sees the results a run without the fault would have given. When the
restarts are exhausted the run fails with :class:`WorkersLost`, naming the
environments and the boards they were playing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records.episodes import EpisodeTally
from ..rules.board import Board


class WorkerError(RuntimeError):
    """A worker that died or failed, named by its environment index."""


class WorkersLost(WorkerError):
    """Environments whose actor could not be restarted: the run cannot go on step-exact."""


class StaleSlice(Exception):
    """A slice asked to act from a state it is not in: ``found`` calls carried out, the driver
    expected ``expected`` (picklable, for Ray). A restarted actor has carried out none."""

    def __init__(self, found: int, expected: int):
        super().__init__(found, expected)
        self.found, self.expected = found, expected


@dataclass
class Episode:
    """The driver's one record of an environment's current episode: what its episode record
    reports, and what rebuilds the environment if its actor is lost."""

    position: int  # the board's position in its file
    task_id: str
    update: int
    start: Board  # the board of the reset
    max_steps: int
    board: Board | None = None  # where the player and the box are now (``start`` until a step)
    sent: list[int] = field(default_factory=list)  # every action sent since the reset, replayed to rebuild
    tally: EpisodeTally = field(default_factory=EpisodeTally)  # the outcome up to the first done: the record's
    ended: bool = False

    def __post_init__(self):
        if self.board is None:
            self.board = self.start

    def replay(self) -> tuple[Board, int, list[int]]:
        """``(board, max_steps, actions)``: what rebuilds the environment where it is now."""
        return self.start, self.max_steps, list(self.sent)


def lost(episodes: list[Episode], indices: list[int], max_restarts: int, cause: BaseException) -> WorkersLost:
    """The error for environments ``indices`` lost for good."""
    boards = ", ".join(f"{i}: {episodes[i].task_id}" if i < len(episodes) else f"{i}: no board yet"
                       for i in indices)
    return WorkersLost(
        f"environments {indices} are lost: their Ray actor died and its restarts are exhausted "
        f"(max_restarts={max_restarts}); boards lost (environment: task ID) {boards}. The driver's "
        f"schedule and records up to this step are intact; rebuild the environments and rerun this "
        f"episode ({type(cause).__name__}: {cause})")
