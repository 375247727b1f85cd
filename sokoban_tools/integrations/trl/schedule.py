"""The validation schedule as a TRL callback: verl-agent's ``val_before_train`` and ``test_freq``.

verl-agent validates at update 0 when ``trainer.val_before_train``, after every
``trainer.test_freq``-th update and after the last; :class:`ValidationSchedule` calls
:meth:`~.run.TrlRun.validate` at the same points of a ``Trainer`` (``on_train_begin``, and
``on_step_end`` with the trainer's ``global_step`` as the update), with the model being
trained and its tokenizer, so ``score`` finds every pass the manifest's schedule declares. Before
each update it sets the run's update, which training records are labelled with.
"""

from __future__ import annotations

from transformers import TrainerCallback

from .policy import TransformersPolicy
from .run import TrlRun


def due(update: int, test_freq: int, last: int) -> bool:
    """Whether verl-agent validates after ``update``: every ``test_freq``-th (0: never), and the last."""
    return update == last or (test_freq > 0 and update % test_freq == 0)


class ValidationSchedule(TrainerCallback):
    """Validation passes of ``run`` on its schedule (see the module docstring)."""

    def __init__(self, run: TrlRun):
        self.run = run

    def _validate(self, model, processing_class, update: int) -> None:
        settings = self.run.settings
        self.run.validate(TransformersPolicy(model, processing_class, settings.max_prompt_length), update)

    def on_step_begin(self, args, state, control, **kwargs):
        self.run.update = state.global_step + 1  # the label of the training records this update writes

    def on_train_begin(self, args, state, control, model=None, processing_class=None, **kwargs):
        if self.run.settings.val_before_train:
            self._validate(model, processing_class, 0)

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        if due(state.global_step, self.run.settings.test_freq, state.max_steps):
            self._validate(model, processing_class, state.global_step)
