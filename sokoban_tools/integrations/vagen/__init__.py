"""VAGEN (visual multi-turn agents on verl) on the stored boards, under VAGEN's own rules.

* :mod:`.env`: :class:`~.env.FairSokoban`, VAGEN's ``Sokoban`` whose ``reset(seed)``
  installs a stored board (needs VAGEN importable);
* :func:`register`: registers it with VAGEN's evaluator as :data:`ENV_NAME`;
  :data:`ENV_REGISTRY_ENTRY` / ``env_registry.yaml`` is the same entry for the
  training side's Hydra ``env_registry``;
* ``eval_validation.yaml``: a ready evaluation config, the 256 validation boards as
  its ``seed_list``;
* :mod:`.rollouts`: VAGEN's evaluated episodes as our episode log and run manifest;
* ``python -m sokoban_tools vagen``: evaluate and log in one command, or log an earlier
  evaluation (:mod:`.cli`).
"""

from __future__ import annotations

from pathlib import Path

from .rollouts import ENV_NAME

HERE = Path(__file__).resolve().parent
EVAL_CONFIG = HERE / "eval_validation.yaml"
ENV_REGISTRY = HERE / "env_registry.yaml"
ENV_CLASS = "sokoban_tools.integrations.vagen.env.FairSokoban"
ENV_REGISTRY_ENTRY = {ENV_NAME: ENV_CLASS}


def register(name: str = ENV_NAME):
    """Register :class:`~.env.FairSokoban` with VAGEN's evaluator (``vagen.envs.registry``) under
    ``name``, so an evaluation config's ``envs`` entry named so plays the stored boards."""
    from vagen.envs.registry import register_env

    from .env import FairSokoban

    register_env(name, FairSokoban)
    return FairSokoban
