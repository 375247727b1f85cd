"""Step-exact recovery of environments whose Ray actor was lost.

Every environment is deterministic and the driver chooses every board and every
action, so nothing a lost actor held is really lost: the :class:`Journal` keeps,
per environment, the board of its last reset and the actions sent since. When an
actor dies (its process killed, its node removed), Ray restarts it empty (the
actor's ``max_restarts``); :func:`call_with_recovery` rebuilds each of its
environments by resetting its board and replaying its actions, then carries out
the call that failed. The trainer sees the results a run without the fault would
have given. When the restarts are exhausted the run fails with
:class:`WorkersLost`, naming the environments and the boards they were playing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..rules.board import Board


class WorkerError(RuntimeError):
    """A worker that died or failed, named by its environment index."""


class WorkersLost(WorkerError):
    """Environments whose actor could not be restarted: the run cannot go on step-exact."""


@dataclass
class _Entry:
    board: Board
    label: str  # the board's task ID, for the message if the environment is lost
    max_steps: int
    actions: list[int] = field(default_factory=list)


class Journal:
    """What rebuilds each environment: its board, its settings and its actions since the reset."""

    def __init__(self):
        self._entries: dict[int, _Entry] = {}

    def reset(self, index: int, board: Board, label: str, max_steps: int) -> None:
        self._entries[index] = _Entry(board, label, max_steps)

    def step(self, index: int, action: int) -> None:
        self._entries[index].actions.append(action)

    def replay(self, indices: list[int]) -> list[tuple[Board, int, list[int]]]:
        """``(board, max_steps, actions)`` for each of ``indices`` that has played (``None`` otherwise)."""
        return [None if i not in self._entries else
                (self._entries[i].board, self._entries[i].max_steps, list(self._entries[i].actions))
                for i in indices]

    def lost(self, indices: list[int], max_restarts: int, cause: BaseException) -> WorkersLost:
        """The error for environments ``indices`` lost for good."""
        boards = ", ".join(f"{i}: {self._entries[i].label}" if i in self._entries else f"{i}: no board yet"
                           for i in indices)
        return WorkersLost(
            f"environments {indices} are lost: their Ray actor died and its restarts are exhausted "
            f"(max_restarts={max_restarts}); boards lost (environment: task ID) {boards}. The driver's "
            f"schedule and records up to this step are intact; rebuild the environments and rerun this "
            f"episode ({type(cause).__name__}: {cause})")


def recover(ray, restore, retry, attempts: int, error: BaseException, lost):
    """After ``error`` (an actor died), ``restore()`` (a call rebuilding its environments, which
    Ray queues until it has restarted the actor) then ``retry()`` the failed call, at most
    ``attempts`` times (the actor's ``max_restarts``); ``retry()``'s result, or ``lost(error)``
    raised when the actor stays dead."""
    for _ in range(attempts):
        try:
            ray.get(restore())
            return ray.get(retry())
        except ray.exceptions.RayActorError as err:
            error = err
    raise lost(error)
