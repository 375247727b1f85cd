"""A training budget and validation schedule in env steps, for learners that count env steps.

Standard library only: the card's training report, ``train``'s checks and every command's
``--help`` read it without gymnasium or torch installed.

verl-agent's schedule is in updates (``update_budget.total_training_steps``,
``evaluation.frequency``, ``evaluation.before_training``), and ``score`` checks a log's
validation passes against it. A learner that counts env steps (stable-baselines3, CleanRL)
gives a :class:`StepSchedule` to the Gymnasium environment instead: the environment writes the three
settings in env steps, with ``update_budget.unit`` "env steps" beside them, the learner labels every record
with its env-step count and each validation pass with its nominal point (:meth:`due`), and
``score`` checks the passes as it checks any schedule. A learner collects env steps in
rollouts, so it reaches a point a little past it (100,352 for 100,000): the pass keeps the
nominal label, and the count actually trained goes into the manifest's costs
(:data:`ENV_STEPS_COST`) beside the nominal budget in its settings.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..checks import integer
from .manifest import BUDGET_UNIT, ENV_STEPS

ENV_STEPS_COST = "training_env_steps"  # costs entry: env steps actually trained (unit "env steps")
UNIT = ENV_STEPS


@dataclass(frozen=True)
class StepSchedule:
    """``total`` env steps of training, a validation pass every ``every`` env steps, after the
    last and, with ``before_training``, at 0."""

    total: int
    every: int
    before_training: bool = True

    def __post_init__(self):
        integer("total", self.total, 1)
        integer("every", self.every, 1)
        if self.every > self.total:
            raise ValueError(f"every={self.every} is beyond the budget total={self.total}: no pass before the last")
        if not isinstance(self.before_training, bool):
            raise TypeError(f"before_training must be true or false, got {self.before_training!r}")

    def settings(self) -> dict:
        """The manifest's schedule settings, in env steps, as their unit says."""
        return {"update_budget.total_training_steps": self.total, BUDGET_UNIT: UNIT, "evaluation.frequency": self.every,
                "evaluation.before_training": self.before_training, "update_budget.total_epochs": None}

    def note(self) -> str:
        return (f"update_budget.total_training_steps, evaluation.frequency and every record's update count {UNIT}, "
                f"not updates; a pass is labelled with its nominal point (the first update boundary at or past "
                f"it); costs.{ENV_STEPS_COST} holds the env steps actually trained")

    def points(self) -> list[int]:
        """Every validation pass's label, in order."""
        points = list(range(self.every, self.total + 1, self.every))
        if points[-1] != self.total:
            points.append(self.total)
        return ([0] if self.before_training else []) + points

    def due(self, done: int, after: int) -> list[int]:
        """The passes due when training moved from ``done`` to ``after`` env steps (both
        actual counts): every point in ``(done, after]`` (the pass at 0 is the caller's, before training)."""
        return [point for point in self.points() if done < point <= after]
