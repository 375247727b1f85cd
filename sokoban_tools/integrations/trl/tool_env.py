"""TRL's ``environment_factory`` route for tool-calling models: another turn than verl-agent's.

``GRPOTrainer(environment_factory=MoveTools(run, rows))`` gives each rollout a
:class:`SokobanMoves`, whose one public method, :meth:`SokobanMoves.move`, is a tool the
model calls. This is **not** verl-agent's turn: the episode is one growing chat (the
instructions, the board, then every call and its result), not a fresh prompt with a short
history each turn, and ``max_completion_length`` bounds the whole episode, tool results
included. So a run of this route records :data:`TOOL_OBSERVATION` as its
``image_processing.observation``, and ``compare`` refuses to pair it with a run of
verl-agent's turn unless told to allow that difference. Its validation passes
(:class:`~.schedule.ValidationSchedule`) still play verl-agent's text turn, as the manifest
notes say.

The board and the rules are the runtime's: a move is an action 1-4, any other word is
action 0 (it spends a turn and moves nothing, as an unparseable answer does), the rewards
are verl-agent's and the episode ends with the box on its target or after the horizon's
turns; later calls are answered that the episode is over. TRL calls
:meth:`SokobanMoves.get_reward` once a rollout, which returns the episode's return and logs
its training record (a chat that stops calling the tool before the end leaves a record cut
short, which a replay names as such).
"""

from __future__ import annotations

from typing import Sequence

from ...records.rows import BoardRow
from ...rules.board import ACTION_NAMES, ACTIONS
from ...runtime.env import FairSokobanEnv, NO_ACTION
from ..served.text_turn import TEXT_MODE
from .dataset import sampler_draws
from .run import TrlRun

TOOL_OBSERVATION = "tiny_rgb_array tool chat"
TOOL_TURN = ("TRL's environment_factory: one growing chat in which the model calls move(direction) once a turn and "
             "reads the tiny_rgb_array grid after it, NOT verl-agent's turn (a fresh prompt a turn); validation passes "
             "play verl-agent's text turn")
TOOL_PROMPT = ("You play Sokoban on the grid below: # wall, _ floor, O target, X box, √ box on target, P you, S you "
               "on a target. Push the box onto the target by calling the move tool once per step; you can only push, "
               "never pull.")
WORDS = {ACTION_NAMES[action]: action for action in ACTIONS}


class SokobanMoves:
    """One rollout's board; see the module docstring. ``reset(task_id=...)`` starts it."""

    def __init__(self, run: TrlRun, rows: dict[str, BoardRow]):
        self.run, self.rows = run, rows
        self.env = FairSokobanEnv(TEXT_MODE, run.settings.horizon)
        self.row: BoardRow | None = None
        self.turns, self.over, self.logged = 0, False, False

    def reset(self, task_id: str, **_) -> str:
        self.row = self.rows[task_id]
        self.env.start(self.row)
        self.turns, self.over, self.logged = 0, False, False
        return "\nYour current observation is:\n" + self.env.render()

    def move(self, direction: str) -> str:
        """Move one cell; a box ahead is pushed if the cell beyond it is free.

        Args:
            direction: up, down, left or right.

        Returns:
            The grid after the move, and whether the box is on its target.
        """
        if self.over:
            return "The episode is over."
        action = WORDS.get(direction.strip().lower(), NO_ACTION)
        _, done, info = self.env.play(action)
        self.turns += 1
        self.over = done or self.turns == self.run.settings.horizon
        state = "The box is on its target: you won." if info["won"] else \
            "The episode is over." if self.over else "The box is not on its target yet."
        return f"{self.env.render()}\n{state}"

    def get_reward(self) -> float:
        """The episode's return; its training record is logged the first time."""
        if not self.logged:
            record = self.env.tally.record(self.run.method, self.run.run, "training", self.run.update,
                                           self.row.task_id, None)
            self.run.record_training([record])
            self.logged = True
        return self.env.tally.total


class MoveTools:
    """The ``environment_factory``: a new :class:`SokobanMoves` over the training ``rows`` each call.
    The callback :class:`~.schedule.ValidationSchedule` keeps ``run.update`` at the update being played."""

    def __init__(self, run: TrlRun, rows: Sequence[BoardRow]):
        if run.observation != TOOL_OBSERVATION:
            raise ValueError(f"the run records the observation {run.observation!r}: give TrlRun "
                             f"observation=TOOL_OBSERVATION and turn=TOOL_TURN, so compare sees the other turn")
        self.run, self.rows = run, {row.task_id: row for row in rows}

    def __call__(self) -> SokobanMoves:
        return SokobanMoves(self.run, self.rows)


def tool_dataset(train_rows: Sequence[BoardRow], groups_per_update: int, group_size: int, seed: int, updates: int):
    """The training set of this route: the fair sampler's draws, each row :data:`TOOL_PROMPT` and the board's
    ``task_id``, which TRL hands ``reset`` (the board itself is the first tool-free observation)."""
    from datasets import Dataset

    rows = [row for draw in sampler_draws(train_rows, groups_per_update, group_size, seed, updates) for row in draw]
    return Dataset.from_dict({"prompt": [[{"role": "user", "content": TOOL_PROMPT}] for _ in rows],
                              "task_id": [row.task_id for row in rows]})
