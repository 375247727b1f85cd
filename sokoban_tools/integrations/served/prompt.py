"""The words of every turn: verl-agent's visual Sokoban prompt, verbatim.

A served model is compared with a verl-agent validation curve only if it reads the
same prompt, byte for byte, so this one text is quoted rather than rewritten:
``SOKOBAN_VISUAL_TEMPLATE`` of ``agent_system/environments/prompts/sokoban.py`` in
verl-agent (Apache License 2.0, (c) Nanyang Technological University and the
verl-agent (GiGPO) team) at the commit :data:`UPSTREAM_COMMIT`. In ``rgb_array`` mode
``SokobanEnvironmentManager.build_text_obs`` gives this text on every turn, history or
not, and the image takes the place of :data:`IMAGE_PLACEHOLDER`.
``tests/test_evaluate.py`` checks it against verl-agent's own ``build_text_obs``; its
SHA-256 is recorded in the run manifest's notes.
"""

from __future__ import annotations

import hashlib

UPSTREAM_COMMIT = "796ed310287fa605c9292a0fce07a86d79fde05e"
IMAGE_PLACEHOLDER = "<image>"
# One string per line, joined by newlines, so that the trailing space of a line survives editors.
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
    'Your admissible actions are ["up", "down", "left", "right"].',
    '',
    "Now it's your turn to make a move (choose ONE action only for the current step).",
    'You should first reason step-by-step about the current situation — observe the positions of boxes and targets, plan a path to push a box toward a target, and avoid traps like corners or walls. This reasoning process MUST be enclosed within <think> </think> tags. ',
    "Once you've finished your reasoning, you should choose an admissible action for current step and present it within <action> </action> tags.",
    '',
))
VISUAL_PROMPT_SHA256 = hashlib.sha256(VISUAL_PROMPT.encode("utf-8")).hexdigest()
