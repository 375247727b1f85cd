"""Batched PPO over ``SokobanFairnessVector-v1``: one policy forward for all B environments,
large minibatches. Not yet the learner of ``python -m sokoban_tools train``.

    from sokoban_tools.training.batched_ppo import train_batched
    passes = train_batched(seed=0, log=Path("runs/batched-ppo.jsonl"), steps=1_000_000, every=100_000)

The project's trainer spends three quarters of a run in stable-baselines3's update (10
epochs of 64-sample minibatches, per-operation overhead) and a forward for every 8
environments (issue 47). Here :data:`ENVS` environments (256) step as arrays
(:class:`~sokoban_tools.integrations.gymnasium_env.vector.SokobanFairnessVectorEnv`, same-step
autoreset), one forward chooses all their actions, and each rollout of :data:`ROLLOUT` steps
(4,096 env steps) is learnt in :data:`EPOCHS` epochs of :data:`MINIBATCH` samples.

The estimator is stable-baselines3's PPO, written for batches: the clipped surrogate, GAE(λ)
advantages from a learned critic (a separate network of the policy's size), normalised per
minibatch, an unclipped value loss, Adam (eps 1e-5) with a learning rate falling linearly to 0
over :data:`DECAY_STEPS`, and a bootstrap from the critic's value of the last observation where
an episode is truncated at the horizon (the Gymnasium ``truncated``), none where it is won. The
network is the current trainer's (two tanh layers of 256 for the policy and for the critic,
over the one-hot grid, stable-baselines3's orthogonal initialisation). The settings are issue
47's trial (256 boards x 16 steps, minibatches of 512, 4 epochs, 3e-3 falling to 0 over
1.5M steps), chosen without the validation boards; ``torch`` runs one thread.

Validation is the trainer's: a greedy pass over the 256 validation boards before training,
every ``every`` env steps and after the last, each on a vector of 256 environments (one board
each, one forward a step), all logged with the training episodes in one episode log under a
:class:`~sokoban_tools.records.budget.StepSchedule`. There are no
checkpoints yet: a run that stops starts again.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np

METHOD = "PPO (batched)"
ENVS = 256
ROLLOUT = 16
EPOCHS = 4
MINIBATCH = 512
LEARNING_RATE = 3e-3
DECAY_STEPS = 1_500_000
GAMMA = 0.99
GAE_LAMBDA = 0.95
CLIP = 0.2
VALUE_COEF = 0.5
ENTROPY_COEF = 0.0
MAX_GRAD_NORM = 0.5
NETWORK = (256, 256)
VALIDATION_ENVS = 256


def hyperparameters() -> dict:
    """What the manifest's notes record of the learner."""
    return {"method": METHOD, "estimator": "stable-baselines3's PPO (clipped surrogate, GAE with a critic), batched",
            "hyperparameters": {"envs": ENVS, "rollout_steps": ROLLOUT, "n_epochs": EPOCHS, "batch_size": MINIBATCH,
                                "learning_rate": f"{LEARNING_RATE} falling linearly to 0 over {DECAY_STEPS:,} env steps",
                                "gamma": GAMMA, "gae_lambda": GAE_LAMBDA, "clip_range": CLIP, "vf_coef": VALUE_COEF,
                                "ent_coef": ENTROPY_COEF, "max_grad_norm": MAX_GRAD_NORM,
                                "network": f"policy and critic MLPs {list(NETWORK)}, tanh"},
            "chosen": "issue 47's trial of a batched PPO; never on the validation boards",
            "validation": "greedy (the most probable action), all 256 boards once a pass"}


def _network(torch, inputs: int, outputs: int, gain: float):
    layers, width = [], inputs
    for size in NETWORK:
        layers += [torch.nn.Linear(width, size), torch.nn.Tanh()]
        width = size
    layers.append(torch.nn.Linear(width, outputs))
    for layer in layers:
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.orthogonal_(layer.weight, gain=2 ** 0.5)
            torch.nn.init.zeros_(layer.bias)
    torch.nn.init.orthogonal_(layers[-1].weight, gain=gain)
    return torch.nn.Sequential(*layers)


class BatchedPPO:
    """The policy, critic, optimiser and rollouts of one run over the vector ``envs``."""

    def __init__(self, envs, seed: int):
        import torch

        self.torch, self.envs = torch, envs
        inputs = int(np.prod(envs.single_observation_space.shape))
        actions = envs.single_action_space.n
        self.policy = _network(torch, inputs, actions, 0.01)
        self.critic = _network(torch, inputs, 1, 1.0)
        self.optimizer = torch.optim.Adam([*self.policy.parameters(), *self.critic.parameters()], lr=LEARNING_RATE,
                                          eps=1e-5)
        self.env_steps = 0
        envs.set_update(0)
        self.observation = self._tensor(envs.reset(seed=seed)[0])
        self.generator = torch.Generator().manual_seed(seed)

    def _tensor(self, observation: np.ndarray):
        return self.torch.as_tensor(observation.reshape(len(observation), -1), dtype=self.torch.float32)

    def greedy(self, observation: np.ndarray) -> np.ndarray:
        """The most probable action of each observation."""
        with self.torch.no_grad():
            return self.policy(self._tensor(observation)).argmax(dim=1).numpy()

    def update(self) -> None:
        """One rollout of :data:`ROLLOUT` steps of every environment, then its epochs."""
        torch, envs, n = self.torch, self.envs, self.envs.num_envs
        envs.set_update(self.env_steps)  # the episodes starting in this rollout are labelled with it
        observations = torch.empty((ROLLOUT, n, self.observation.shape[1]))
        actions = torch.empty((ROLLOUT, n), dtype=torch.int64)
        log_probs, values, rewards = (torch.empty((ROLLOUT, n)) for _ in range(3))
        ended = torch.empty((ROLLOUT, n))
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
                    reward[cut] += GAMMA * self.critic(final).squeeze(1)
                rewards[t] = reward
                ended[t] = torch.as_tensor(terminated | truncated, dtype=torch.float32)
                self.observation = self._tensor(observation)
            following = self.critic(self.observation).squeeze(1)
            advantages = torch.empty((ROLLOUT, n))
            running = torch.zeros(n)
            for t in reversed(range(ROLLOUT)):
                going = 1.0 - ended[t]
                delta = rewards[t] + GAMMA * following * going - values[t]
                running = delta + GAMMA * GAE_LAMBDA * going * running
                advantages[t], following = running, values[t]
            returns = advantages + values
        self.env_steps += ROLLOUT * n
        for group in self.optimizer.param_groups:
            group["lr"] = LEARNING_RATE * max(0.0, 1.0 - self.env_steps / DECAY_STEPS)
        self._learn(observations.reshape(ROLLOUT * n, -1), actions.reshape(-1), log_probs.reshape(-1),
                    advantages.reshape(-1), returns.reshape(-1))

    def _learn(self, observations, actions, old_log_probs, advantages, returns) -> None:
        torch = self.torch
        parameters = [*self.policy.parameters(), *self.critic.parameters()]
        for _ in range(EPOCHS):
            order = torch.randperm(len(actions), generator=self.generator)
            for start in range(0, len(order), MINIBATCH):
                batch = order[start:start + MINIBATCH]
                logits = self.policy(observations[batch])
                log_probs = torch.log_softmax(logits, dim=1)
                taken = log_probs.gather(1, actions[batch, None]).squeeze(1)
                advantage = advantages[batch]
                advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
                ratio = torch.exp(taken - old_log_probs[batch])
                policy_loss = -torch.min(advantage * ratio, advantage * ratio.clamp(1 - CLIP, 1 + CLIP)).mean()
                value_loss = (returns[batch] - self.critic(observations[batch]).squeeze(1)).pow(2).mean()
                entropy = -(log_probs.exp() * log_probs).sum(dim=1).mean()
                loss = policy_loss + VALUE_COEF * value_loss - ENTROPY_COEF * entropy
                self.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(parameters, MAX_GRAD_NORM)
                self.optimizer.step()


def validate(learner: BatchedPPO, envs, label: int) -> int:
    """One greedy pass over the validation boards (one each of ``envs``' environments), logged
    under ``label``; returns the wins."""
    envs.set_update(label)
    observation, _ = envs.reset(seed=0) if label == 0 else envs.reset()
    playing = np.ones(envs.num_envs, bool)
    wins = 0
    while playing.any():
        observation, _, terminated, truncated, _ = envs.step(learner.greedy(observation))
        wins += int(np.count_nonzero(terminated & playing))
        playing &= ~(terminated | truncated)
    return wins


def train_batched(seed: int, log: Path, steps: int, every: int) -> list[dict]:
    """Train one run of ``steps`` env steps, validating every ``every``; returns its passes
    ({"update": nominal env steps, "env_steps": actual, "wins": n, "cpu_seconds": so far})."""
    import torch
    from gymnasium.vector import AutoresetMode

    from ..integrations.gymnasium_env.vector import SokobanFairnessVectorEnv
    from ..records.budget import StepSchedule
    from .train import settings

    started = time.process_time()
    torch.set_num_threads(1)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    schedule = StepSchedule(steps, every)
    common = {"observation": "grid", "episode_log": log, "method": METHOD, "run": str(seed), "update": 0,
              "settings": settings("ppo"), "schedule": schedule, "notes": hyperparameters()}
    train = SokobanFairnessVectorEnv(ENVS, split="train", autoreset_mode=AutoresetMode.SAME_STEP, **common)
    validation = SokobanFairnessVectorEnv(VALIDATION_ENVS, split="validation", **common)
    passes = []
    try:
        learner = BatchedPPO(train, seed)

        def passed(label: int) -> None:
            passes.append({"update": label, "env_steps": learner.env_steps, "wins": validate(learner, validation, label),
                           "cpu_seconds": time.process_time() - started})

        passed(0)
        for point in schedule.points()[1:]:
            done = learner.env_steps
            while learner.env_steps < point:
                learner.update()
            for due in schedule.due(done, learner.env_steps):
                passed(due)
    finally:
        train.close()
        validation.close()
    return passes
