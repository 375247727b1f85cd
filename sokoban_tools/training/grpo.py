"""GRPO at CPU scale: group-relative advantages under PPO's clipped objective, no critic.

Each update draws ``boards`` training boards from the fair sampler and plays each
``group_size`` times (verl-agent's ``env.rollout.n``): environment ``i`` of
``boards * group_size`` is shard ``i`` of the draw, so positions ``g * group_size ...``
are board ``g``'s copies (:class:`sokoban_tools.runtime.sampler.TrainingBatch`). Every
step of an episode gets the episode's advantage, its return less the mean of its group's
returns over their standard deviation (verl-agent's GRPO with ``norm_adv_by_std_in_grpo``),
and the policy takes ``epochs`` passes of PPO's clipped loss over the update's steps in
minibatches. With ``step_weight`` > 0 it is GiGPO: the step-level advantage of
:mod:`.gigpo` is added, weighted. The policy and optimiser are stable-baselines3's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .gigpo import step_advantages

EPSILON = 1e-6  # verl-agent's, under both normalisations


@dataclass
class Episode:
    """One episode of a group: its board's group, each step's state (the observation's bytes),
    observation, action, log-probability and reward."""

    group: int
    states: list[bytes] = field(default_factory=list)
    observations: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    log_probs: list[float] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)

    @property
    def score(self) -> float:
        return float(sum(self.rewards))


def episode_advantages(episodes: list[Episode]) -> list[float]:
    """GRPO's outcome advantage of each episode, normalised within its group (a group of one
    is left as it is, as verl-agent leaves it)."""
    groups: dict[int, list[float]] = {}
    for episode in episodes:
        groups.setdefault(episode.group, []).append(episode.score)
    stats = {g: (np.mean(s), np.std(s, ddof=1)) if len(s) > 1 else (0.0, 1.0) for g, s in groups.items()}
    return [(e.score - stats[e.group][0]) / (stats[e.group][1] + EPSILON) for e in episodes]


def group_advantages(episodes: list[Episode], step_weight: float, gamma: float) -> list[np.ndarray]:
    """Each episode's per-step advantage: GRPO's episode advantage on every step, plus
    ``step_weight`` times GiGPO's step advantage when ``step_weight`` is not 0."""
    outcome = episode_advantages(episodes)
    if not step_weight:
        return [np.full(len(e.actions), a) for e, a in zip(episodes, outcome)]
    steps = step_advantages(episodes, gamma, EPSILON)
    return [a + step_weight * s for a, s in zip(outcome, steps)]


@dataclass(frozen=True)
class GroupSettings:
    boards: int  # groups per update
    group_size: int  # env.rollout.n
    epochs: int
    batch_size: int  # minibatch, in steps
    learning_rate: float
    clip_range: float
    max_grad_norm: float
    ent_coef: float
    step_weight: float = 0.0  # 0: GRPO; GiGPO's omega otherwise
    gamma: float = 1.0  # GiGPO's discount of step returns


class GroupLearner:
    """GRPO (or GiGPO) on a stable-baselines3 policy over the environments ``envs`` (the
    shards of one draw, see the module docstring); :meth:`update` collects one update's groups
    and trains on them, counting env steps in :attr:`env_steps`."""

    def __init__(self, policy, envs: list, settings: GroupSettings, seed: int):
        self.policy, self.envs, self.settings, self.seed = policy, envs, settings, seed
        self.env_steps = 0
        self.updates = 0

    def collect(self) -> list[Episode]:
        """One episode in every environment, all stepped together through the policy."""
        episodes, observations = [], []
        for i, env in enumerate(self.envs):
            env.set_update(self.env_steps)
            observation, _ = env.reset(seed=self.seed + i if self.updates == 0 and self.env_steps == 0 else None)
            observations.append(observation)
            episodes.append(Episode(group=i // self.settings.group_size))
        active = list(range(len(self.envs)))
        while active:
            batch = np.stack([observations[i] for i in active])
            with torch.no_grad():
                distribution = self.policy.get_distribution(self.policy.obs_to_tensor(batch)[0])
                actions = distribution.get_actions(deterministic=False)
                log_probs = distribution.log_prob(actions)
            still = []
            for i, action, log_prob in zip(active, actions.tolist(), log_probs.tolist()):
                episode, observation = episodes[i], observations[i]
                episode.states.append(observation.tobytes())
                episode.observations.append(observation)
                episode.actions.append(action)
                episode.log_probs.append(log_prob)
                observations[i], reward, terminated, truncated, _ = self.envs[i].step(action)
                episode.rewards.append(reward)
                self.env_steps += 1
                if not (terminated or truncated):
                    still.append(i)
            active = still
        return episodes

    def update(self) -> None:
        """Collect one update's groups and take the clipped-loss passes over their steps."""
        s = self.settings
        episodes = self.collect()
        advantages = group_advantages(episodes, s.step_weight, s.gamma)
        observations = self.policy.obs_to_tensor(np.stack([o for e in episodes for o in e.observations]))[0]
        actions = torch.as_tensor([a for e in episodes for a in e.actions])
        old = torch.as_tensor([p for e in episodes for p in e.log_probs], dtype=torch.float32)
        advantage = torch.as_tensor(np.concatenate(advantages), dtype=torch.float32)
        optimizer = self.policy.optimizer
        self.policy.set_training_mode(True)
        for _ in range(s.epochs):
            order = torch.randperm(len(actions))
            for start in range(0, len(actions), s.batch_size):
                chosen = order[start:start + s.batch_size]
                distribution = self.policy.get_distribution(observations[chosen])
                log_prob = distribution.log_prob(actions[chosen])
                ratio = torch.exp(log_prob - old[chosen])
                clipped = torch.clamp(ratio, 1 - s.clip_range, 1 + s.clip_range)
                loss = -torch.min(ratio * advantage[chosen], clipped * advantage[chosen]).mean()
                if s.ent_coef:
                    loss = loss - s.ent_coef * distribution.entropy().mean()
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), s.max_grad_norm)
                optimizer.step()
        self.policy.set_training_mode(False)
        self.updates += 1

    def state_dict(self) -> dict:
        return {"policy": self.policy.state_dict(), "optimizer": self.policy.optimizer.state_dict(),
                "env_steps": self.env_steps, "updates": self.updates,
                "envs": [env.state_dict() for env in self.envs]}

    def load_state_dict(self, state: dict) -> None:
        self.policy.load_state_dict(state["policy"])
        self.policy.optimizer.load_state_dict(state["optimizer"])
        self.env_steps, self.updates = state["env_steps"], state["updates"]
        for env, saved in zip(self.envs, state["envs"]):
            env.load_state_dict(saved)
