"""The training set a ``GRPOTrainer`` reads: one prompt row per training board, in the fair sampler's draw order.

A run of verl-agent with the drop-in runtime trains, update after update, on the boards
:class:`sokoban_tools.runtime.sampler.TrainingSampler` draws (``data.train_batch_size``
distinct boards an update, seeded). :func:`training_dataset` lays those draws out as a
``datasets.Dataset``: the ``groups_per_update`` boards of update 0, then those of update 1,
and so on, each row the board's first text turn as verl-agent shows it
(:class:`~sokoban_tools.integrations.served.turn.Episode`'s first message in
``tiny_rgb_array`` mode: the prompt with the board's text grid). The trainer must read the rows
in that order (``shuffle_dataset=False``) and repeat each ``num_generations`` times, which
its sampler does. A row holds nothing else: never the stored solution, the generation
seed or the solution's length.

The rollout function finds the board back from the prompt alone (TRL hands it nothing
else): :class:`PromptBoards` maps a first-turn prompt to its row, since the first turn
shows the whole board.
"""

from __future__ import annotations

from typing import Sequence

from ...records.rows import BoardRow
from ...runtime.sampler import TrainingSampler
from ..served.text_turn import TEXT_MODE
from ..served.turn import Episode

PROMPT = "prompt"  # the one column: TRL's conversational prompt


def first_turn(row: BoardRow, history_length: int) -> list[dict]:
    """The messages of an episode's first text turn at ``row``'s board, as verl-agent shows them."""
    return Episode(row, 1, TEXT_MODE, history_length).messages()


def prompt_key(messages: Sequence[dict]) -> tuple[str, ...]:
    """What identifies a first-turn prompt: its messages' texts, in order."""
    return tuple(message["content"] for message in messages)


class PromptBoards:
    """The training rows by their first-turn prompt, for the rollout function."""

    def __init__(self, rows: Sequence[BoardRow], history_length: int):
        self.history_length = history_length
        self._rows: dict[tuple, BoardRow] = {}
        for row in rows:
            key = prompt_key(first_turn(row, history_length))
            other = self._rows.setdefault(key, row)
            if other.board != row.board:
                raise ValueError(f"{row.task_id} and {other.task_id} show the same first turn but are different "
                                 f"boards")

    def row(self, prompt: Sequence[dict]) -> BoardRow:
        """The row whose first turn ``prompt`` is; a ``ValueError`` naming the fix otherwise."""
        found = self._rows.get(prompt_key(prompt))
        if found is None:
            raise ValueError("the trainer handed the rollout a prompt that is no training board's first turn: give "
                             "GRPOTrainer the dataset training_dataset() made, with the rollout's history length "
                             f"({self.history_length})")
        return found


def sampler_draws(train_rows: Sequence[BoardRow], groups_per_update: int, group_size: int, seed: int,
                  updates: int) -> list[list[BoardRow]]:
    """The boards of each of ``updates`` updates, as the fair sampler draws them for verl-agent
    (``data.train_batch_size`` = ``groups_per_update``, ``env.rollout.n`` = ``group_size``, ``env.seed``)."""
    sampler = TrainingSampler([row.task_id for row in train_rows], groups_per_update, group_size, seed)
    return [[train_rows[int(i)] for i in sampler.next_batch().group_task_indices] for _ in range(updates)]


def training_dataset(train_rows: Sequence[BoardRow], groups_per_update: int, group_size: int, seed: int,
                     updates: int, history_length: int):
    """The ``datasets.Dataset`` of :func:`sampler_draws`, one :data:`PROMPT` row per board drawn, and
    the :class:`PromptBoards` of its rows."""
    from datasets import Dataset

    rows = [row for draw in sampler_draws(train_rows, groups_per_update, group_size, seed, updates) for row in draw]
    dataset = Dataset.from_dict({PROMPT: [first_turn(row, history_length) for row in rows]})
    return dataset, PromptBoards(rows, history_length)
