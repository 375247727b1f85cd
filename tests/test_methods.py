"""Every training method is a module of the one list, with the interface ``train`` builds on and a
recipe that says, per setting, where its value comes from. A new method added to
``sokoban_tools.training.methods.METHODS`` is checked here without a line of its own."""

from __future__ import annotations

import numpy as np
import pytest

from sokoban_tools.training.methods import BY_NAME, LABELS, METHODS
from sokoban_tools.training.recipe import Choice
from sokoban_tools.training.step_rows import StepRows, key_index

NAMES = [module.NAME for module in METHODS]


def test_the_list_names_each_method_once_and_train_offers_exactly_those(capsys):
    from sokoban_tools.training.train import main

    assert len(set(NAMES)) == len(NAMES) and len(set(LABELS.values())) == len(NAMES)
    assert NAMES[:5] == ["ppo", "grpo", "gigpo", "rloo", "drgrpo"]
    with pytest.raises(SystemExit):
        main(["--method", "nonesuch", "--seed", "0", "--log", "x.jsonl"])
    assert "{" + ",".join(sorted(NAMES)) + "}" in capsys.readouterr().err


@pytest.mark.parametrize("name", NAMES)
def test_a_method_module_states_its_recipe_with_sources_and_the_reason_of_every_deviation(name):
    module = BY_NAME[name]
    assert module.LABEL and module.SUMMARY and callable(module.build)
    assert set(module.CONTROLLED) == {"rollout.group_size", "update_budget.groups_per_update", "decoding.training.n"}
    names = [choice.name for choice in module.RECIPE]
    assert len(set(names)) == len(names), "a setting stated twice"
    assert {"network", "learning_rate", "validation_decoding"} <= set(names)
    # the tuning grid sets three of its settings, by the names its recipe gives them
    assert set(module.TUNED) == {"learning_rate", "epochs", "minibatch_rows"}
    assert set(module.TUNED.values()) <= set(names)
    for choice in module.RECIPE:
        assert isinstance(choice, Choice) and choice.source, choice
        assert choice.reason or not choice.deviates, choice  # a deviation says why


def rows_of(episodes: list[tuple[int, list[float], list[int]]]) -> StepRows:
    """Step rows from (group, rewards, states) per episode; states as small integers."""
    group, episode, reward, state = [], [], [], []
    for i, (g, rewards, states) in enumerate(episodes):
        group += [g] * len(rewards)
        episode += [i] * len(rewards)
        reward += rewards
        state += states
    return StepRows(np.array(group), np.array(episode), np.array(reward), np.array(state, dtype=np.uint8)[:, None])


@pytest.mark.parametrize("name", [m.NAME for m in METHODS if hasattr(m, "advantages")])
def test_an_estimator_is_a_pure_function_of_the_step_rows(name):
    estimator = BY_NAME[name].advantages
    rows = rows_of([(0, [-0.1, -0.1, 10.9], [1, 2, 3]), (0, [-0.1] * 4, [1, 2, 2, 4]), (1, [10.9], [5]),
                    (1, [-0.1, -0.1], [5, 6]), (1, [-0.1, 10.9], [5, 6])])
    copy = StepRows(*(np.array(a) for a in (rows.group, rows.episode, rows.reward, rows.state)))
    first = estimator(rows)
    assert first.shape == (len(rows.reward),) and np.isfinite(first).all()
    np.testing.assert_array_equal(estimator(rows), first)  # deterministic
    for field in ("group", "episode", "reward", "state"):
        np.testing.assert_array_equal(getattr(rows, field), getattr(copy, field))  # untouched
    won, lost = first[2], first[3]  # a win's last step against a loss's first, in one group
    assert won > lost
    with pytest.raises(ValueError, match="one per step"):
        StepRows(rows.group[:-1], rows.episode, rows.reward, rows.state)


def test_the_key_index_tells_identical_states_apart_within_groups_only():
    keys = key_index(np.array([0, 0, 1, 0]), np.array([[1, 2], [1, 2], [1, 2], [2, 1]], dtype=np.uint8))
    assert keys[0] == keys[1] and len({keys[0], keys[2], keys[3]}) == 3
