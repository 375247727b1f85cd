"""Gymnasium learners on the stored boards: importing this module registers
:data:`~.env.ENV_ID` (``SokobanFairness-v1``), so

    import gymnasium
    env = gymnasium.make("sokoban_tools.integrations.gymnasium_env:SokobanFairness-v1")
    envs = gymnasium.make_vec("sokoban_tools.integrations.gymnasium_env:SokobanFairness-v1", num_envs=16)

(Gymnasium imports the module named before the colon) or, after ``import
sokoban_tools.integrations.gymnasium_env``, simply ``gymnasium.make("SokobanFairness-v1")``.
The environment is :class:`~.env.SokobanFairnessEnv`. :data:`VECTOR_ENV_ID`
(``SokobanFairnessVector-v1``) is the same environment, whose ``gymnasium.make_vec`` steps all
its environments at once as arrays (:class:`.vector.SokobanFairnessVectorEnv`), for batched
learners. Needs the ``gymnasium`` extra.
For stable-baselines3, :func:`.sb3.make_sb3_vec` builds the fair shards as its ``VecEnv`` in
one call (the ``train`` extra); :class:`sokoban_tools.records.budget.StepSchedule` states a budget and a
validation schedule in env steps.
"""

from __future__ import annotations

import gymnasium

from .env import ENV_ID, SokobanFairnessEnv, make_vector
from .vector import VECTOR_ENV_ID, SokobanFairnessVectorEnv

__all__ = ["ENV_ID", "VECTOR_ENV_ID", "SokobanFairnessEnv", "SokobanFairnessVectorEnv", "make_vector", "register"]


def register() -> None:
    """Register :data:`ENV_ID` and :data:`VECTOR_ENV_ID` with Gymnasium (once; importing this module does it)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point="sokoban_tools.integrations.gymnasium_env.env:SokobanFairnessEnv",
                           vector_entry_point="sokoban_tools.integrations.gymnasium_env.env:make_vector",
                           disable_env_checker=False)
    if VECTOR_ENV_ID not in gymnasium.registry:  # the same environment; make_vec steps it as arrays
        gymnasium.register(VECTOR_ENV_ID, entry_point="sokoban_tools.integrations.gymnasium_env.env:SokobanFairnessEnv",
                           vector_entry_point="sokoban_tools.integrations.gymnasium_env.vector:SokobanFairnessVectorEnv",
                           disable_env_checker=False)


register()
