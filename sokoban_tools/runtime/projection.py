"""Model text to Sokoban action, as verl-agent's ``sokoban_projection`` maps it, without gym.

verl-agent turns each model answer into an action with ``sokoban_projection``
from its original Sokoban package, whose ``__init__`` imports ``gym`` and
``gym_sokoban``. A fair run plays our environments and must not need those, so
the patched ``make_envs`` (``sokoban_tools/integrations/verl_agent/``) uses :func:`sokoban_projection`
from here: standard library only, and the same action and validity for every
text (``tests/test_projection.py`` compares the two on generated answers).

The rule, as verl-agent applies it:

* the answer is what lies between the first ``<action>`` and the first
  ``</action>``, both found case-insensitively; if either tag is missing the
  action is 0 and invalid;
* the action is that of the first of ``up``, ``down``, ``left``, ``right``,
  ``still`` contained in the lower-cased answer (``still`` is 0), else 0 and
  invalid;
* a found action is valid only if the text also holds ``<think>`` and
  ``</think>`` exactly as written (case-sensitive).
"""

from __future__ import annotations

from typing import Sequence

from ..rules.board import DOWN, LEFT, RIGHT, UP

NO_ACTION = 0  # verl-agent's "still", and what an answer without an action becomes (as in .env)
ACTION_OPEN, ACTION_CLOSE = "<action>", "</action>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# Searched in this order: the first word contained in the answer decides.
ACTION_WORDS = (("up", UP), ("down", DOWN), ("left", LEFT), ("right", RIGHT), ("still", NO_ACTION))


def project_answer(text: str) -> tuple[int, bool]:
    """The action (0-4) one model answer asks for, and whether the answer is valid."""
    lowered = text.lower()
    start, end = lowered.find(ACTION_OPEN), lowered.find(ACTION_CLOSE)
    if start < 0 or end < 0:
        return NO_ACTION, False
    answer = lowered[start + len(ACTION_OPEN):end]  # empty when the closing tag comes first
    for word, action in ACTION_WORDS:
        if word in answer:
            return action, THINK_OPEN in text and THINK_CLOSE in text
    return NO_ACTION, False


def sokoban_projection(texts: Sequence[str]) -> tuple[list[int], list[int]]:
    """verl-agent's ``projection_f`` for Sokoban: ``(actions, valids)`` for a batch of answers,
    ``valids`` as 0/1. The input is left as it is (verl-agent's overwrites it in place)."""
    actions, valids = [], []
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"answer {index} must be the model's text (str), got {type(text).__name__}")
        action, valid = project_answer(text)
        actions.append(action)
        valids.append(int(valid))
    return actions, valids
