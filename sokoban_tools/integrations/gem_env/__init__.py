"""Text-LLM trainers on the stored boards through GEM (``gem-llm``): importing this module
registers :data:`~.env.ENV_IDS` with GEM, so

    import gem
    import sokoban_tools.integrations.gem_env
    env = gem.make("sokoban-fairness:validation")                       # reset(seed=i): board i
    envs = gem.make_vec(["sokoban-fairness:validation"] * 8, shard_count=8)  # one pass: 32 episodes each
    train = gem.make("sokoban-fairness:train")                          # the fair sampler

The environment is :class:`~.env.SokobanFairnessGemEnv`. Needs the ``gem`` extra.
"""

from __future__ import annotations

import gem

from .env import ENV_IDS, SokobanFairnessGemEnv

__all__ = ["ENV_IDS", "SokobanFairnessGemEnv", "register"]


def register() -> None:
    """Register :data:`ENV_IDS` with GEM (importing this module does it)."""
    from gem.envs.registration import ENV_REGISTRY

    for split, env_id in ENV_IDS.items():
        if env_id not in ENV_REGISTRY:
            gem.register(env_id, "sokoban_tools.integrations.gem_env.env:SokobanFairnessGemEnv", split=split)


register()
