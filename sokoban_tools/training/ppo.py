"""PPO: stable-baselines3's, on the fair shards (:func:`~sokoban_tools.integrations.gymnasium_env.sb3.make_sb3_vec`).

The learner trains in segments (``learn(..., reset_num_timesteps=False)``, which never
resets the environments), labels each rollout's episodes with the env steps done when the
rollout began, and keeps in :meth:`PPOLearner.state_dict` everything a resumed run needs to
continue exactly: the policy and optimiser, the step count, the last observations, the
environments' own states (the episodes under way, replayed on restore) and their ``Monitor``'s.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback


class _Progress(BaseCallback):
    """Labels every rollout with the env steps done before it, and reports progress."""

    def __init__(self, report: Callable[[int], None]):
        super().__init__()
        self.report = report

    def _on_rollout_start(self) -> None:
        self.training_env.env_method("set_update", self.num_timesteps)

    def _on_rollout_end(self) -> None:
        self.report(self.num_timesteps)

    def _on_step(self) -> bool:
        return True


class PPOLearner:
    """stable-baselines3's PPO on ``envs`` (a ``VecEnv`` of the fair shards) with ``settings``
    (keyword arguments of ``PPO``)."""

    def __init__(self, envs, settings: dict, policy_kwargs: dict, seed: int):
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
                             callback=_Progress(report))

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
