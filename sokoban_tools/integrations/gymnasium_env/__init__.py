"""Gymnasium learners on the stored boards: importing this module registers
:data:`~.env.ENV_ID` (``SokobanFairness-v1``), so

    import gymnasium
    env = gymnasium.make("sokoban_tools.integrations.gymnasium_env:SokobanFairness-v1")
    envs = gymnasium.make_vec("sokoban_tools.integrations.gymnasium_env:SokobanFairness-v1", num_envs=16)

(Gymnasium imports the module named before the colon) or, after ``import
sokoban_tools.integrations.gymnasium_env``, simply ``gymnasium.make("SokobanFairness-v1")``.
The environment is :class:`~.env.SokobanFairnessEnv`. Needs the ``gymnasium`` extra.
For stable-baselines3, :func:`.sb3.make_sb3_vec` builds the fair shards as its ``VecEnv`` in
one call (the ``train`` extra); :class:`sokoban_tools.records.budget.StepSchedule` states a budget and a
validation schedule in env steps.
"""

from __future__ import annotations

import gymnasium

from .env import ENV_ID, SokobanFairnessEnv, make_vector

__all__ = ["ENV_ID", "SokobanFairnessEnv", "make_vector", "register"]


def register() -> None:
    """Register :data:`ENV_ID` with Gymnasium (once; importing this module does it)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point="sokoban_tools.integrations.gymnasium_env.env:SokobanFairnessEnv",
                           vector_entry_point="sokoban_tools.integrations.gymnasium_env.env:make_vector",
                           disable_env_checker=False)


register()
