"""The fair shards as a stable-baselines3 ``VecEnv``, in one call (needs the ``train`` extra).

    from sokoban_tools.integrations.gymnasium_env.sb3 import make_sb3_vec
    envs = make_sb3_vec(8, seed=0, observation="grid", episode_log="runs/ppo.jsonl", method="PPO")
    model = stable_baselines3.PPO("MlpPolicy", envs)

stable-baselines3 cannot take Gymnasium's vector (``gymnasium.make_vec``), and a
``DummyVecEnv`` of separately made environments plays every board in each, each with its
own draw. Here environment ``i`` is shard ``i`` of ``num_envs`` (see
:mod:`.env`), wrapped in stable-baselines3's ``Monitor`` (its episode statistics), and the
vector is seeded with ``seed``, so environment ``i`` gets ``seed + i`` and the shards split
one draw of the fair sampler between them. Label a validation pass with
``envs.env_method("set_update", n)`` (or ``envs.set_options({"update": n})``) before its
``reset()``.
"""

from __future__ import annotations

from functools import partial

from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from ...checks import integer
from .env import SokobanFairnessEnv


def _monitored(**kwargs) -> Monitor:
    return Monitor(SokobanFairnessEnv(**kwargs), allow_early_resets=True)


def make_sb3_vec(num_envs: int, seed: int, **kwargs) -> DummyVecEnv:
    """A ``DummyVecEnv`` of ``num_envs`` shards of :class:`SokobanFairnessEnv` (``kwargs`` are its
    arguments), seeded ``seed`` so that they share the sampler's draws."""
    num_envs = integer("num_envs", num_envs, 1)
    seed = integer("seed", seed, 0)
    envs = DummyVecEnv([partial(_monitored, shard_index=i, shard_count=num_envs, **kwargs) for i in range(num_envs)])
    envs.seed(seed)
    return envs
