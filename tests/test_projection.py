"""The stdlib projection gives verl-agent's action and validity for every model answer.

verl-agent's own ``projection.py`` (../shared/verl-agent/, imported by path: it needs
torch, not gym) is the reference; the answers are generated: well-formed, malformed,
mixed case, several tags, no think block, empty, unicode, and random mixtures of all.
"""

from __future__ import annotations

import importlib.util
import itertools
import random
import subprocess
import sys

import pytest

from conftest import REPO
from sokoban_tools.runtime.projection import project_answer, sokoban_projection
from unavailable import unavailable

ORIGINAL = REPO.parent / "shared" / "verl-agent" / "agent_system" / "environments" / "env_package" / "sokoban" / "projection.py"

WORDS = ["up", "down", "left", "right", "still", "Up", "DOWN", "Left", "rIGHT", "STILL", "upward", "downright",
         "stillleft", "move up", "go", "", " ", "none", "u p", "İup", "uP\u0130", "\u212aright", "ｕｐ", "向上",
         "left\n", "\tright ", "upupdown", "stop", "<action>up", "</action>"]
OPENERS = ["<action>", "<ACTION>", "<Action>", "<action >", "<actİon>", "", "<action", "action>"]
CLOSERS = ["</action>", "</ACTION>", "</Action>", "", "</action", "< /action>", "<action>"]
THINKS = ["<think>plan</think>", "<THINK>plan</THINK>", "<think>plan", "plan</think>", "", "<think></think>",
          "</think><think>", "<think>Σ ς İ 🙂</think>", "<Think>x</Think>"]
PIECES = ["<think>", "</think>", "<action>", "</action>", "<ACTION>", "</Action>", "<THINK>", "up", "down",
          "left", "right", "still", "UP", "Right", " ", "\n", "é", "İ", "\u212a", "Σ", "🙂", "x", "<", ">", "/",
          "action", "think", "\x00"]


@pytest.fixture(scope="module")
def original():
    if not ORIGINAL.is_file():
        unavailable(f"verl-agent's projection.py is missing at {ORIGINAL}; ../shared/verl-agent/ holds it")
    if importlib.util.find_spec("torch") is None:
        unavailable("torch is not installed (verl-agent's projection.py imports it); pip install -e '.[test]'")
    spec = importlib.util.spec_from_file_location("verl_agent_sokoban_projection", ORIGINAL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sokoban_projection


def answers() -> list[str]:
    """Every combination of think block, tags and words, in both orders, plus random mixtures."""
    made = []
    for think, opener, word, closer in itertools.product(THINKS, OPENERS, WORDS, CLOSERS):
        made.append(f"{think}{opener}{word}{closer}")
        made.append(f"{opener}{word}{closer}{think}")
    for first, second in itertools.product(WORDS[:10], repeat=2):  # several action blocks
        made.append(f"<think>t</think><action>{first}</action><action>{second}</action>")
        made.append(f"<think>t</think></action>{first}<action>{second}</action>")
    rng = random.Random(16)
    for _ in range(20000):
        made.append("".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14))))
    made.append("")
    return made


def test_every_generated_answer_gets_verl_agents_action_and_validity(original):
    texts = answers()
    assert len(texts) > 50000
    expected_actions, expected_valids = original(list(texts))  # it overwrites its argument
    actions, valids = sokoban_projection(texts)
    mismatches = [(text, (a, v), (ea, ev)) for text, a, v, ea, ev in
                  zip(texts, actions, valids, expected_actions, expected_valids) if (a, v) != (ea, ev)]
    assert not mismatches, mismatches[:5]
    # the set reaches every outcome: each action valid, and invalid answers
    assert {(a, v) for a, v in zip(actions, valids)} == {(a, 1) for a in range(5)} | {(0, 0), (1, 0), (2, 0),
                                                                                         (3, 0), (4, 0)}


@pytest.mark.parametrize("text, expected", [
    ("<think>push it</think><action>Up</action>", (1, True)),
    ("<think>wait</think><action>still</action>", (0, True)),  # "still" is action 0, yet valid
    ("<action>left</action>", (3, False)),  # no think block: the action counts, the answer is invalid
    ("<THINK>x</THINK><ACTION>RIGHT</ACTION>", (4, False)),  # action tags ignore case, think tags do not
    ("<think>x</think><action>downup</action>", (1, True)),  # "up" is looked for first
    ("<think>x</think><action>jump</action>", (0, False)),
    ("", (0, False)),
])
def test_the_rule_in_examples(text, expected):
    assert project_answer(text) == expected


def test_the_answers_are_left_as_they_are_and_non_text_is_refused_naming_its_index():
    texts = ["<think>a</think><action>up</action>", "x"]
    assert sokoban_projection(texts) == ([1, 0], [1, 0]) and texts == ["<think>a</think><action>up</action>", "x"]
    with pytest.raises(TypeError, match="answer 1 must be the model's text"):
        sokoban_projection(["up", None])


def test_importing_the_projection_loads_no_third_party_module():
    code = ("import sys, sokoban_tools.runtime.projection\n"
            "print(sorted(m for m in ('numpy', 'torch', 'gym', 'gym_sokoban', 'datasets') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
