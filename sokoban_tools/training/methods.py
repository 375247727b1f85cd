"""The training methods: one module each, and the one list that ``train --method``, the run
manifest, the docs and the charts are built from.

A method module (``ppo.py``, ``grpo.py``, ...) has its hyperparameters at the top and provides

- ``NAME`` (what ``--method`` takes and published files are named by) and ``LABEL`` (the
  manifest's method, shown on the card and the charts);
- ``SUMMARY``, one line on what it computes, and ``RECIPE``, its settings as
  :class:`~.recipe.Choice` records (value, source, deviation);
- ``CONTROLLED``, the manifest settings it fixes (group size, groups an update, samples a board);
- ``TUNED``, the names its recipe gives the settings the tuning grid sets (:mod:`.tuning`);
- ``build(common, seed, config=None)``, its :class:`Learner` on the training shards (``common``: the
  environments' shared arguments: log, method label, schedule, settings, notes, tuning), with a
  tuning grid point's ``config`` in place of its recipe's values where one is given;
- for a group-relative method, ``advantages(rows)``: a pure function of
  :class:`~.step_rows.StepRows`, which any learner that collects step rows can use.

Adding a method is one file and one line in :data:`METHODS` (docs/training.md says which test
to copy).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Protocol

import numpy as np

from . import drgrpo, gigpo, grpo, ppo, rloo

METHODS: tuple[ModuleType, ...] = (ppo, grpo, gigpo, rloo, drgrpo)
BY_NAME = {module.NAME: module for module in METHODS}
LABELS = {module.NAME: module.LABEL for module in METHODS}


class Learner(Protocol):
    """What ``train`` needs of a learner: its greedy actions (the validation passes'), its
    training environments, the env steps it has trained, training on to a step count in whole
    rollouts or updates, and a state a resumed run restores exactly."""

    envs: object
    env_steps: int

    def greedy(self, observations: np.ndarray) -> np.ndarray: ...

    def train_until(self, target: int, report: Callable[[int], None]) -> None: ...

    def close(self) -> None: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...
