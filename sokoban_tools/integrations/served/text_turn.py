"""The text turn: what verl-agent's validation shows a model in ``tiny_rgb_array`` mode.

In any mode but ``rgb_array``, ``SokobanEnvironmentManager`` (verl-agent's
``agent_system/environments/env_manager.py``) shows a model one user message of plain
text a turn, built by ``build_text_obs``: on the first turn, and on every turn when
``env.history_length`` is 0 or less, ``SOKOBAN_TEMPLATE_NO_HIS`` with the board's text
grid; later, ``SOKOBAN_TEMPLATE`` with the steps taken so far and ``SimpleMemory.fetch``'s
history (``agent_system/memory/memory.py``): the last ``history_length`` turns, each the
grid the model saw and the action the projection made of its answer, numbered from 1,
as ``[Observation n: '<grid>', Action n: '<Word>']`` lines joined by newlines. The word
is the manager's ``ACTION_LOOKUP`` of the projected action (``Still`` for an unparseable
answer). The content is a string, not a list of parts: llama.cpp's server answers a
text model's list of parts with HTTP 500, and a string is what verl-agent's chat holds.
"""

from __future__ import annotations

from ...rules.board import Board
from ...runtime.env import render
from .prompt import TEXT_PROMPT, TEXT_PROMPT_NO_HISTORY

TEXT_MODE = "tiny_rgb_array"
# SokobanEnvironmentManager.ACTION_LOOKUP: the words its memory records, by action
ACTION_LOOKUP = ("Still", "Up", "Down", "Left", "Right")


def history_lines(memory: list[tuple[str, int]], history_length: int) -> str:
    """``SimpleMemory.fetch`` of one environment: its last ``history_length`` (grid, action)
    records, numbered by their place in the whole memory."""
    recent = memory[-history_length:]
    start = len(memory) - len(recent)
    return "\n".join(f"[Observation {start + j + 1}: '{grid}', Action {start + j + 1}: '{ACTION_LOOKUP[action]}']"
                     for j, (grid, action) in enumerate(recent))


class TextTurn:
    """One board's text turns: :meth:`message` at a position, :meth:`played` after each step."""

    def __init__(self, history_length: int):
        self.history_length = history_length
        self.memory: list[tuple[str, int]] = []  # (grid shown, action played), one per step

    def text(self, board: Board) -> str:
        grid = render(board, TEXT_MODE)
        if not self.memory or self.history_length <= 0:
            return TEXT_PROMPT_NO_HISTORY.format(current_observation=grid)
        recent = min(len(self.memory), self.history_length)
        return TEXT_PROMPT.format(step_count=len(self.memory), history_length=recent,
                                  action_history=history_lines(self.memory, self.history_length),
                                  current_step=len(self.memory) + 1, current_observation=grid)

    def message(self, board: Board) -> dict:
        return {"role": "user", "content": self.text(board)}

    def played(self, board: Board, action: int) -> None:
        """Remember the grid shown at ``board`` and the ``action`` its answer became."""
        self.memory.append((render(board, TEXT_MODE), action))
