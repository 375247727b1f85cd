"""PPO as stable-baselines3's, with its GAE critic, on the fair shards
(:func:`~sokoban_tools.integrations.gymnasium_env.sb3.make_sb3_vec`).

The learner trains in segments (``learn(..., reset_num_timesteps=False)``, which never
resets the environments), labels each rollout's episodes with the env steps done when the
rollout began, and keeps in :meth:`PPOLearner.state_dict` everything a resumed run needs to
continue exactly: the policy and optimiser, the step count, the last observations, the
environments' own states (the episodes under way, replayed on restore) and their ``Monitor``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .recipe import LEARNING_RATE, NETWORK, Choice, network_choice

if TYPE_CHECKING:
    from .tuning import Config

NAME = "ppo"
LABEL = "PPO"
ENVS = 8
SETTINGS = {"learning_rate": LEARNING_RATE, "n_steps": 256, "batch_size": 64, "n_epochs": 10, "gamma": 0.99,
            "gae_lambda": 0.95, "clip_range": 0.2, "ent_coef": 0.0, "vf_coef": 0.5, "max_grad_norm": 0.5}

SUMMARY = "stable-baselines3's PPO, with its GAE critic"
DEFAULT = "stable-baselines3 2.9.2's PPO default"
RECIPE = (network_choice("stable-baselines3's MlpPolicy default is net_arch [64, 64]"),
          Choice("n_envs", ENVS, "CPU-scale choice", deviates=True,
                 reason="8 environments of 256 steps keep the default rollout of 2,048 steps (n_steps 2048, one "
                        "environment) while stepping 8 boards at once"),
          Choice("n_steps", SETTINGS["n_steps"], "CPU-scale choice", deviates=True,
                 reason="the default is 2048 per environment; 8 x 256 is the same rollout"),
          *(Choice(key, SETTINGS[key], DEFAULT) for key in ("learning_rate", "batch_size", "n_epochs", "gamma",
                                                             "gae_lambda", "clip_range", "ent_coef", "vf_coef",
                                                             "max_grad_norm")),
          Choice("normalize_advantage", True, DEFAULT),
          Choice("optimizer", "Adam, eps 1e-5", DEFAULT),
          Choice("validation_decoding", "greedy (the most probable action)",
                 "stable-baselines3's evaluate_policy default (deterministic=True)"))
CONTROLLED = {"rollout.group_size": None, "update_budget.groups_per_update": None, "decoding.training.n": 1}
TUNED = {"learning_rate": "learning_rate", "epochs": "n_epochs", "minibatch_rows": "batch_size"}  # grid -> PPO's names


def build(common: dict, seed: int, config: Config | None = None) -> PPOLearner:
    """The learner on ``ENVS`` fair shards (``common``: the environments' shared arguments), with
    a tuning grid point's ``config`` in place of the recipe's values where one is given."""
    from ..integrations.gymnasium_env.sb3 import make_sb3_vec

    tuned = {} if config is None else {TUNED[key]: value for key, value in config.values().items()}
    return PPOLearner(make_sb3_vec(ENVS, seed, split="train", **common), {**SETTINGS, **tuned}, {"net_arch": NETWORK},
                      seed)


def _progress(report: Callable[[int], None]):
    """A callback that labels every rollout with the env steps done before it, and reports progress."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Progress(BaseCallback):
        def _on_rollout_start(self) -> None:
            self.training_env.env_method("set_update", self.num_timesteps)

        def _on_rollout_end(self) -> None:
            report(self.num_timesteps)

        def _on_step(self) -> bool:
            return True

    return Progress()


class PPOLearner:
    """stable-baselines3's PPO on ``envs`` (a ``VecEnv`` of the fair shards) with ``settings``
    (keyword arguments of ``PPO``)."""

    def __init__(self, envs, settings: dict, policy_kwargs: dict, seed: int):
        from stable_baselines3 import PPO

        self.envs = envs
        self.model = PPO("MlpPolicy", envs, policy_kwargs=policy_kwargs, seed=seed, device="cpu", verbose=0,
                         **settings)

    @property
    def policy(self):
        return self.model.policy

    @property
    def env_steps(self) -> int:
        return self.model.num_timesteps

    def train_until(self, target: int, report: Callable[[int], None]) -> None:
        """Whole rollouts until at least ``target`` env steps are done."""
        if target > self.env_steps:
            self.model.learn(total_timesteps=target - self.env_steps, reset_num_timesteps=False,
                             callback=_progress(report))

    def close(self) -> None:
        for env in self.envs.envs:
            env.close()

    def state_dict(self) -> dict:
        model = self.model
        return {"policy": model.policy.state_dict(), "optimizer": model.policy.optimizer.state_dict(),
                "num_timesteps": model.num_timesteps, "n_updates": model._n_updates,
                "last_obs": None if model._last_obs is None else np.array(model._last_obs),
                "last_episode_starts": None if model._last_episode_starts is None else
                np.array(model._last_episode_starts),
                "envs": [env.unwrapped.state_dict() for env in self.envs.envs],
                "monitors": [{"rewards": list(env.rewards), "needs_reset": env.needs_reset} for env in self.envs.envs]}

    def load_state_dict(self, state: dict) -> None:
        model = self.model
        model.policy.load_state_dict(state["policy"])
        model.policy.optimizer.load_state_dict(state["optimizer"])
        model.num_timesteps, model._n_updates = state["num_timesteps"], state["n_updates"]
        for env, saved, monitor in zip(self.envs.envs, state["envs"], state["monitors"]):
            env.unwrapped.load_state_dict(saved)
            env.rewards, env.needs_reset = list(monitor["rewards"]), monitor["needs_reset"]  # its episode under way
        model._last_obs, model._last_episode_starts = state["last_obs"], state["last_episode_starts"]
