"""Exact shortest solutions, counting every player action (walks and pushes).

Breadth-first search over (player, box) positions, expanding up, down, left,
right in that order. Of all shortest solutions it returns the first in that
order: the one verl-agent's ``get_shortest_action_path`` returns, since that
search visits states in the same order (it only deduplicates later).
"""

from __future__ import annotations

from collections import deque

from .board import Board, layout


def shortest_solution(board: Board) -> list[int] | None:
    """The first shortest action sequence that puts the box on the target, or
    ``None`` when no sequence does. A solved board gives ``[]``."""
    room = layout(board.room_fixed)
    moves = room.moves
    target = room.cell(board.target)
    start = (room.cell(board.player), room.cell(board.box))

    parents: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        if state[1] == target:
            return _path(parents, state)
        for action, player, box, _ in moves(*state):
            nxt = (player, box)
            if nxt not in parents:
                parents[nxt] = (state, action)
                queue.append(nxt)
    return None


def _path(parents, state) -> list[int]:
    actions = []
    while parents[state] is not None:
        state, action = parents[state]
        actions.append(action)
    actions.reverse()
    return actions
