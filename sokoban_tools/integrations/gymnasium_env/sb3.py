"""The fair shards as a stable-baselines3 ``VecEnv``, in one call (needs the ``train`` extra).

    from sokoban_tools.integrations.gymnasium_env.sb3 import make_sb3_vec
    envs = make_sb3_vec(8, seed=0, observation="grid", episode_log="runs/ppo.jsonl", method="PPO")
    model = stable_baselines3.PPO("MlpPolicy", envs)

stable-baselines3 cannot take Gymnasium's vector (``gymnasium.make_vec``), and a
``DummyVecEnv`` of separately made environments plays every board in each, each with its
own draw. Here environment ``i`` is shard ``i`` of ``num_envs`` (see
:mod:`.env`), wrapped in stable-baselines3's ``Monitor`` (its episode statistics), and the
vector is seeded with ``seed``, so environment ``i`` gets ``seed + i`` and the shards split
one draw of the fair sampler between them; the ``Monitor`` is also what ``evaluate_policy``
looks for (without it, it warns on every pass). Label a validation pass with
``envs.env_method("set_update", n)`` (or ``envs.set_options({"update": n})``) before its
``reset()``, and another pass of the same model with ``envs.env_method("set_run", r)``.

:func:`sb3_settings` states a learner's controlled settings for the manifest (its network,
sampled training, greedy or sampled validation) as ``train`` states its own, and
:func:`sb3_costs` its costs, so that a run written by hand compares with ``train``'s
without ``--allow-difference`` when it matches them.
"""

from __future__ import annotations

from functools import partial

from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from ...checks import integer
from ...records.budget import ENV_STEPS_COST, UNIT
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


def sb3_settings(model, deterministic: bool = True) -> dict:
    """The controlled settings a stable-baselines3 on-policy ``model`` (PPO, A2C) states, for the
    environment's ``settings=``: its network (an MLP's layers), training that samples from the
    policy (temperature 1, one action a step), validation greedy (``deterministic``, as
    ``evaluate_policy`` is called) or sampled, every action valid (no invalid-action penalty),
    and no groups. The environment states the rest (observation, horizon, rewards, and the
    budget and schedule of its ``schedule=``)."""
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
    from stable_baselines3.common.torch_layers import FlattenExtractor

    if not isinstance(model, OnPolicyAlgorithm):
        raise TypeError(f"sb3_settings states an on-policy learner's sampling (PPO, A2C), not a "
                        f"{type(model).__name__}'s; give the settings of sokoban_tools.records.manifest.SETTINGS "
                        f"yourself")
    if not isinstance(deterministic, bool):
        raise TypeError(f"deterministic must be what evaluate_policy is given, true or false, got {deterministic!r}")
    policy = model.policy
    layers = policy.net_arch
    if isinstance(layers, dict) and layers.get("pi") == layers.get("vf"):
        layers = layers["pi"]  # stable-baselines3's default: the same layers for the policy and the value
    network = (f"MLP {layers}" if isinstance(policy.features_extractor, FlattenExtractor)
               else f"{type(policy.features_extractor).__name__} then MLP {layers}")
    sampled = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "do_sample": True, "n": 1}
    validation = ({f"decoding.validation.{key}": value for key, value in sampled.items()} if not deterministic else
                  {"decoding.validation.do_sample": False, "decoding.validation.n": 1})
    return {"initial_weights.model": f"{network} (random initialisation seeded by the run)",
            "reward.invalid_action_penalty": False, "rollout.group_size": None,
            "update_budget.groups_per_update": None,
            **{f"decoding.training.{key}": value for key, value in sampled.items()}, **validation}


def sb3_costs(model, cpu_seconds: float) -> dict[str, tuple[str, float]]:
    """The cost entries of a trained ``model`` for :func:`sokoban_tools.records.manifest.add_costs`:
    the env steps it trained (beside the nominal budget) and the CPU-seconds it took, as ``train``
    records them."""
    return {"cpu_seconds": ("CPU-seconds", float(cpu_seconds)), ENV_STEPS_COST: (UNIT, int(model.num_timesteps))}
