"""PPO as stable-baselines3 computes it, batched: one policy forward for all :data:`ENVS`
environments of ``SokobanFairnessVector-v1``, large minibatches.

stable-baselines3's own PPO spent three quarters of a run in its update (10 epochs of 64-sample
minibatches, mostly per-operation overhead) and a forward for every 8 environments: some 700
CPU-seconds for 1M env steps (issue 47; ``benchmark`` measures it beside this learner). Here the
environments step as arrays (same-step autoreset), one forward chooses all their actions, and
each rollout of :data:`ROLLOUT` steps an environment (4,096 env steps) is learnt in
``n_epochs`` epochs of ``batch_size`` samples.

The estimator is stable-baselines3's: the clipped surrogate, GAE(λ) advantages from a learned
critic (a network of the policy's size), normalised per minibatch, an unclipped value loss, Adam
(eps 1e-5), the gradient clipped, and a bootstrap from the critic's value of the last observation
where the horizon (Gymnasium's ``truncated``), not the game, ended an episode. The network is
stable-baselines3's ``MlpPolicy`` layout and initialisation (orthogonal, gains √2, 0.01 for the
policy's output, 1 for the critic's) with :data:`~.recipe.NETWORK`'s layers. :data:`RECIPE` says
which settings are stable-baselines3's defaults and which are CPU-scale choices.

:meth:`PPOLearner.state_dict` keeps everything a resumed run needs to continue exactly: the
networks and optimiser, the step count, the sampling generator, the vector's own state and its
observations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .recipe import NETWORK, Choice

if TYPE_CHECKING:
    from .tuning import Config

NAME = "ppo"
LABEL = "PPO"
ENVS = 256
ROLLOUT = 16
DECAY_STEPS = 1_500_000
SETTINGS = {"learning_rate": 3e-3, "n_steps": ROLLOUT, "n_envs": ENVS, "batch_size": 512, "n_epochs": 4,
            "gamma": 0.99, "gae_lambda": 0.95, "clip_range": 0.2, "ent_coef": 0.0, "vf_coef": 0.5,
            "max_grad_norm": 0.5}

SUMMARY = "stable-baselines3's PPO, with its GAE critic, batched over 256 environments"
DEFAULT = "stable-baselines3 2.9.2's PPO default"
TRIAL = "CPU-scale choice: issue 47's trial of a batched PPO, adopted as reported (not tuned by the project)"
RECIPE = (Choice("network", f"policy and critic MLPs {NETWORK}, tanh, over the one-hot grid (stable-baselines3's "
                            f"MlpPolicy layout and initialisation)", "CPU-scale choice", deviates=True,
                 reason="stable-baselines3's MlpPolicy default is net_arch [64, 64]; a CPU benchmark trains a small "
                        "MLP from scratch, the same for every method"),
          Choice("n_envs", ENVS, TRIAL, deviates=True,
                 reason="the default is one environment; 256 boards stepped as arrays make one forward and one "
                        "environment step for 256 env steps"),
          Choice("n_steps", ROLLOUT, TRIAL, deviates=True,
                 reason="the default is 2048 per environment; 256 x 16 is a rollout of 4,096"),
          Choice("batch_size", SETTINGS["batch_size"], TRIAL, deviates=True,
                 reason="the default is 64: an optimiser step of 64 samples is mostly per-operation overhead"),
          Choice("n_epochs", SETTINGS["n_epochs"], TRIAL, deviates=True, reason="the default is 10"),
          Choice("learning_rate", SETTINGS["learning_rate"], TRIAL, deviates=True, reason="the default is 3e-4"),
          Choice("learning_rate_schedule", f"linear, to 0 at {DECAY_STEPS:,} env steps", TRIAL, deviates=True,
                 reason="the default is constant"),
          *(Choice(key, SETTINGS[key], DEFAULT) for key in ("gamma", "gae_lambda", "clip_range", "ent_coef",
                                                             "vf_coef", "max_grad_norm")),
          Choice("normalize_advantage", True, DEFAULT),
          Choice("optimizer", "Adam, eps 1e-5", DEFAULT),
          Choice("validation_decoding", "greedy (the most probable action)",
                 "stable-baselines3's evaluate_policy default (deterministic=True)"))
CONTROLLED = {"rollout.group_size": None, "update_budget.groups_per_update": None, "decoding.training.n": 1}
TUNED = {"learning_rate": "learning_rate", "epochs": "n_epochs", "minibatch_rows": "batch_size"}  # grid -> PPO's names


def build(common: dict, seed: int, config: Config | None = None) -> PPOLearner:
    """The learner on a vector of ``ENVS`` training environments (``common``: the environments'
    shared arguments), with a tuning grid point's ``config`` in place of the recipe's values
    where one is given."""
    from gymnasium.vector import AutoresetMode

    from ..integrations.gymnasium_env.vector import SokobanFairnessVectorEnv

    tuned = {} if config is None else {TUNED[key]: value for key, value in config.values().items()}
    envs = SokobanFairnessVectorEnv(ENVS, split="train", autoreset_mode=AutoresetMode.SAME_STEP, **common)
    return PPOLearner(envs, seed, {**SETTINGS, **tuned})


def _network(torch, inputs: int, outputs: int, gain: float):
    """stable-baselines3's MLP: tanh layers of :data:`NETWORK`, orthogonal weights (gain √2, the
    output layer ``gain``), zero biases."""
    layers, width = [], inputs
    for size in NETWORK:
        layers += [torch.nn.Linear(width, size), torch.nn.Tanh()]
        width = size
    layers.append(torch.nn.Linear(width, outputs))
    linear = layers[::2]
    for layer in linear:
        torch.nn.init.orthogonal_(layer.weight, gain=gain if layer is linear[-1] else 2 ** 0.5)
        torch.nn.init.zeros_(layer.bias)
    return torch.nn.Sequential(*layers)


class PPOLearner:
    """The policy, critic, optimiser and rollouts of one run over the vector ``envs`` with
    ``settings`` (:data:`SETTINGS`' keys)."""

    def __init__(self, envs, seed: int, settings: dict):
        import torch

        self.torch, self.envs, self.settings = torch, envs, settings
        inputs = int(np.prod(envs.single_observation_space.shape))
        self.policy = _network(torch, inputs, envs.single_action_space.n, 0.01)
        self.critic = _network(torch, inputs, 1, 1.0)
        self.parameters = [*self.policy.parameters(), *self.critic.parameters()]
        self.optimizer = torch.optim.Adam(self.parameters, lr=settings["learning_rate"], eps=1e-5, foreach=True)
        self.env_steps = 0
        envs.set_update(0)
        self.observation = self._tensor(envs.reset(seed=seed)[0])
        self.generator = torch.Generator().manual_seed(seed)

    def _tensor(self, observation: np.ndarray):
        return self.torch.as_tensor(observation.reshape(len(observation), -1), dtype=self.torch.float32)

    def greedy(self, observations: np.ndarray) -> np.ndarray:
        """The most probable action of each observation."""
        with self.torch.no_grad():
            return self.policy(self._tensor(observations)).argmax(dim=1).numpy()

    def train_until(self, target: int, report: Callable[[int], None]) -> None:
        """Whole rollouts until at least ``target`` env steps are done."""
        while self.env_steps < target:
            self.update()
            report(self.env_steps)

    def update(self) -> None:
        """One rollout of :data:`ROLLOUT` steps of every environment, then its epochs."""
        torch, envs, n, gamma = self.torch, self.envs, self.envs.num_envs, self.settings["gamma"]
        envs.set_update(self.env_steps)  # the episodes starting in this rollout are labelled with it
        observations = torch.empty((ROLLOUT, n, self.observation.shape[1]))
        actions = torch.empty((ROLLOUT, n), dtype=torch.int64)
        log_probs, values, rewards, ended = (torch.empty((ROLLOUT, n)) for _ in range(4))
        with torch.no_grad():
            for t in range(ROLLOUT):
                observations[t] = self.observation
                logits = self.policy(self.observation)
                chosen = torch.multinomial(torch.softmax(logits, dim=1), 1, generator=self.generator).squeeze(1)
                actions[t] = chosen
                log_probs[t] = torch.log_softmax(logits, dim=1).gather(1, chosen[:, None]).squeeze(1)
                values[t] = self.critic(self.observation).squeeze(1)
                observation, reward, terminated, truncated, infos = envs.step(chosen.numpy())
                reward = torch.as_tensor(reward, dtype=torch.float32)
                cut = np.flatnonzero(truncated & ~terminated)
                if len(cut):  # the horizon, not the game, ended these: the critic's value of where they stood
                    final = self._tensor(np.stack([infos["final_obs"][i] for i in cut]))
                    reward[cut] += gamma * self.critic(final).squeeze(1)
                rewards[t] = reward
                ended[t] = torch.as_tensor(terminated | truncated, dtype=torch.float32)
                self.observation = self._tensor(observation)
            following = self.critic(self.observation).squeeze(1)
            advantages = torch.empty((ROLLOUT, n))
            running = torch.zeros(n)
            for t in reversed(range(ROLLOUT)):
                going = 1.0 - ended[t]
                delta = rewards[t] + gamma * following * going - values[t]
                running = delta + gamma * self.settings["gae_lambda"] * going * running
                advantages[t], following = running, values[t]
            returns = advantages + values
        self.env_steps += ROLLOUT * n
        for group in self.optimizer.param_groups:
            group["lr"] = self.settings["learning_rate"] * max(0.0, 1.0 - self.env_steps / DECAY_STEPS)
        self._learn(observations.reshape(ROLLOUT * n, -1), actions.reshape(-1), log_probs.reshape(-1),
                    advantages.reshape(-1), returns.reshape(-1))

    def _learn(self, observations, actions, old_log_probs, advantages, returns) -> None:
        torch, settings = self.torch, self.settings
        clip, size = settings["clip_range"], settings["batch_size"]
        for _ in range(settings["n_epochs"]):
            order = torch.randperm(len(actions), generator=self.generator)
            for start in range(0, len(order), size):
                batch = order[start:start + size]
                log_probs = torch.log_softmax(self.policy(observations[batch]), dim=1)
                taken = log_probs.gather(1, actions[batch, None]).squeeze(1)
                advantage = advantages[batch]
                advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
                ratio = torch.exp(taken - old_log_probs[batch])
                policy_loss = -torch.min(advantage * ratio, advantage * ratio.clamp(1 - clip, 1 + clip)).mean()
                value_loss = (returns[batch] - self.critic(observations[batch]).squeeze(1)).pow(2).mean()
                entropy = -(log_probs.exp() * log_probs).sum(dim=1).mean()
                loss = policy_loss + settings["vf_coef"] * value_loss - settings["ent_coef"] * entropy
                self.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.parameters, settings["max_grad_norm"])
                self.optimizer.step()

    def close(self) -> None:
        self.envs.close()

    def state_dict(self) -> dict:
        return {"policy": self.policy.state_dict(), "critic": self.critic.state_dict(),
                "optimizer": self.optimizer.state_dict(), "env_steps": self.env_steps,
                "generator": self.generator.get_state(), "envs": self.envs.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.policy.load_state_dict(state["policy"])
        self.critic.load_state_dict(state["critic"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.env_steps = state["env_steps"]
        self.generator.set_state(state["generator"])
        self.observation = self._tensor(self.envs.load_state_dict(state["envs"]))
