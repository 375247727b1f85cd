"""The words of every turn: verl-agent's Sokoban prompts, verbatim.

A served model is compared with a verl-agent validation curve only if it reads the
same prompt, byte for byte, so these texts are quoted rather than rewritten: the
templates of ``agent_system/environments/prompts/sokoban.py`` in verl-agent (Apache
License 2.0, (c) Nanyang Technological University and the verl-agent (GiGPO) team) at
the commit :data:`UPSTREAM_COMMIT`.

- ``SOKOBAN_VISUAL_TEMPLATE`` (:data:`VISUAL_PROMPT`): in ``rgb_array`` mode
  ``SokobanEnvironmentManager.build_text_obs`` gives this text on every turn, history
  or not, and the image takes the place of :data:`IMAGE_PLACEHOLDER`.
- ``SOKOBAN_TEMPLATE_NO_HIS`` (:data:`TEXT_PROMPT_NO_HISTORY`) and ``SOKOBAN_TEMPLATE``
  (:data:`TEXT_PROMPT`): in any other mode (``tiny_rgb_array``, verl-agent's default) the
  first turn, and every turn when ``env.history_length`` is 0 or less, is the first with
  the board's text grid; later turns are the second, with ``SimpleMemory.fetch``'s
  history. Both are ``str.format`` templates, filled as verl-agent fills them
  (:mod:`.text_turn`). They share every line but the ones of the current step, so they
  are written here as shared lines around each one's own.

``tests/test_evaluate.py`` and ``tests/test_text_turn.py`` check the texts against
verl-agent's own ``build_text_obs``; their SHA-256 are recorded in the run manifest's notes.
"""

from __future__ import annotations

import hashlib

UPSTREAM_COMMIT = "796ed310287fa605c9292a0fce07a86d79fde05e"
IMAGE_PLACEHOLDER = "<image>"
# One string per line, joined by newlines, so that the trailing space of a line survives editors.
_ANSWER = (  # how every prompt, visual or text, asks for the move
    'Your admissible actions are ["up", "down", "left", "right"].',
    '',
    "Now it's your turn to make a move (choose ONE action only for the current step).",
    'You should first reason step-by-step about the current situation — observe the positions of boxes and targets, plan a path to push a box toward a target, and avoid traps like corners or walls. This reasoning process MUST be enclosed within <think> </think> tags. ',
    "Once you've finished your reasoning, you should choose an admissible action for current step and present it within <action> </action> tags.",
    '',
)
VISUAL_PROMPT = "\n".join((
    '',
    'You are an expert agent operating in the Sokoban environment. Your goal is to push all the boxes onto the target spots. Once all boxes are on the targets, you win!',
    '',
    '# Rules',
    "You can only push boxes. You can't pull them, so plan ahead to avoid getting stuck.",
    "You can't walk through or push boxes into walls.",
    "To avoid traps, do not push boxes into corners or against walls where they can't be moved again.",
    '',
    '# Visual Elements in the Image:',
    'Character: A small, green alien-like figure with two antennae and black eyes. It represents you.',
    'Box: A yellow crate marked with an orange "X" across its front. It is the box you need to push.',
    'Target: A black tile outlined in red, with a small red diamond shape in the center. It marks the destination where a box should be pushed.',
    '',
    '# Current Step',
    'Your current observation is shown in the image: <image>',
    *_ANSWER,
))
VISUAL_PROMPT_SHA256 = hashlib.sha256(VISUAL_PROMPT.encode("utf-8")).hexdigest()

_TEXT_HEAD = (
    '',
    'You are an expert agent operating in the Sokoban environment.',
    '',
    '# Symbols and Their Meaning',
    "- Walls (`#`): These block movement. You can't move through or push anything into walls.",
    '- Floor (`_`): Open spaces where you can walk and move boxes.',
    '- Targets (`O`): The spots where boxes need to go.',
    '- Boxes (`X`): These are what you need to push onto the targets.',
    "- Player (`P`): That's you! You'll move around the grid to push boxes.",
    '- Box on Target (`√`): A box successfully placed on a target.',
    '- Player on Target (`S`): You standing on a target.',
    '',
    '# Your Goal',
    'Your goal is to push all the boxes (`X`) onto the target spots (`O`). Once all boxes are on the targets, you win!',
    '',
    '# Rules',
    "You can only push boxes. You can't pull them, so plan ahead to avoid getting stuck.",
    "You can't walk through or push boxes into walls (`#`).",
    "To avoid traps, do not push boxes into corners or against walls where they can't be moved again.",
    '',
    '# Current Step',
)
_TEXT_TAIL = ('{current_observation}', *_ANSWER)
TEXT_PROMPT_NO_HISTORY = "\n".join((*_TEXT_HEAD, 'Your current observation is:', *_TEXT_TAIL))
TEXT_PROMPT = "\n".join((
    *_TEXT_HEAD,
    'Prior to this step, you have already taken {step_count} step(s). Below are the most recent {history_length} observations and the corresponding actions you took: {action_history}',
    'You are now at step {current_step} and your current observation is:',
    *_TEXT_TAIL,
))
TEXT_PROMPT_NO_HISTORY_SHA256 = hashlib.sha256(TEXT_PROMPT_NO_HISTORY.encode("utf-8")).hexdigest()
TEXT_PROMPT_SHA256 = hashlib.sha256(TEXT_PROMPT.encode("utf-8")).hexdigest()
