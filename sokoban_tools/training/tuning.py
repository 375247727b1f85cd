"""The tuning search, stated before it is run: one grid and one budget for every method.

Every method today trains with one configuration, chosen for PPO; a method tuned by nobody
loses to one tuned by its library's authors. So each method gets the same search: the
:data:`GRID` of 12 configurations (learning rate x epochs x minibatch size, in step rows),
each trained with :data:`SEEDS` for :data:`STEPS` env steps as a tuning run, which trains on
the training boards outside the tuning split and validates on the split's 256 boards, never on
the validation boards (:mod:`sokoban_tools.records.tuning_split`):

    python -m sokoban_tools train --method M --seed S --log LOG --tuning --config K \\
        --steps 500000 --eval-every 100000

The grid holds each method's own defaults (PPO: 3e-3, falling linearly as its recipe's rate does,
4 epochs, minibatches of 512; the group methods: 3e-4, 1 epoch, 512 rows), so a search can keep
them. It was stated before any tuning run; it changed once before the search, when PPO's recipe
became the batched learner's. :data:`CHOICE_RULE` picks a
method's configuration from its 24 runs; the final runs then train ``--config K`` without
``--tuning``, and their manifests record each value's source as the grid point.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from .recipe import Choice

LEARNING_RATES = (3e-4, 1e-3, 3e-3)
EPOCHS = (1, 4)
MINIBATCH_ROWS = (64, 512)
SEEDS = (0, 1)
STEPS = 500_000
EVAL_EVERY = 100_000
CHOICE_RULE = ("the configuration whose tuning-split success at the last pass, the mean over the seeds, is "
               "highest; equal means go to the lower grid index")
SOURCE = "tuning grid point {index} (sokoban_tools/training/tuning.py)"


@dataclass(frozen=True)
class Config:
    """One point of the grid: the learner's hyperparameters a tuning search sets."""

    learning_rate: float
    epochs: int
    minibatch_rows: int

    def values(self) -> dict:
        return {field.name: getattr(self, field.name) for field in fields(self)}


GRID = tuple(Config(rate, epochs, rows) for rate in LEARNING_RATES for epochs in EPOCHS for rows in MINIBATCH_ROWS)


def grid_point(index: int) -> Config:
    """The configuration ``index`` of :data:`GRID` (``train --config``)."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(GRID):
        raise ValueError(f"a tuning grid point is a whole number from 0 to {len(GRID) - 1}, got {index!r}")
    return GRID[index]


def recipe_point(module) -> int:
    """The grid point holding the recipe values of the method ``module`` (its ``RECIPE`` and ``TUNED``)."""
    recipe = {choice.name: choice.value for choice in module.RECIPE}
    return GRID.index(Config(**{key: recipe[name] for key, name in module.TUNED.items()}))


def tuned_recipe(recipe: tuple[Choice, ...], names: dict[str, str], index: int) -> tuple[Choice, ...]:
    """``recipe`` with the choices the grid sets (``names``: grid name -> the method's choice name)
    taken from grid point ``index`` and sourced to it; a value that differs from the recipe's
    deviates, and says what the recipe had."""
    values = {names[key]: value for key, value in grid_point(index).values().items()}
    source = SOURCE.format(index=index)

    def tuned(choice: Choice) -> Choice:
        if choice.name not in values:
            return choice
        if values[choice.name] == choice.value:
            return replace(choice, source=f"{source}; the recipe's value: {choice.source}")
        return replace(choice, value=values[choice.name], source=source, deviates=True,
                       reason=f"the recipe has {choice.value} ({choice.source})")

    return tuple(map(tuned, recipe))

