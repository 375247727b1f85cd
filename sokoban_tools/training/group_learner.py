"""The learner of every group-relative method (GRPO, GiGPO, RLOO, Dr. GRPO): no critic, groups of
episodes of one board, and verl-agent's actor update.

Each update draws ``GROUPS_PER_UPDATE`` training boards from the fair sampler and plays each
``GROUP_SIZE`` times (verl-agent's ``env.rollout.n``): environment ``i`` of
``GROUPS_PER_UPDATE * GROUP_SIZE`` is shard ``i`` of the draw, so positions
``g * GROUP_SIZE ...`` are board ``g``'s copies (:class:`sokoban_tools.runtime.sampler.TrainingBatch`).
The update's steps become :class:`.step_rows.StepRows`, the method's estimator (a pure function
of them) gives each row its advantage, and the policy takes ``EPOCHS`` passes over the rows in
minibatches of verl-agent's ``compute_policy_loss`` (PPO's clip with dual-clip, the mean over
the minibatch's rows) less the entropy bonus, with the gradient clipped. The recipe is
verl-agent's Sokoban launchers' and its ``ppo_trainer.yaml``'s, except where :data:`RECIPE`
says it deviates and why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .recipe import (GIGPO_LAUNCHER, GRPO_LAUNCHER, LEARNING_RATE, NETWORK, VERL_CONFIG, Choice, network_choice)
from .step_rows import StepRows
from .tuning import Config

if TYPE_CHECKING:  # torch is imported where a learner runs, not where the recipe is read
    import torch

GROUPS_PER_UPDATE = 32
GROUP_SIZE = 8
EPOCHS = 1
MINIBATCH_ROWS = 64 * GROUP_SIZE
CLIP_RATIO = 0.2
CLIP_RATIO_C = 3.0
ENTROPY_COEF = 0.001
GRAD_CLIP = 1.0
WEIGHT_DECAY = 0.01
LAUNCHERS = f"{GRPO_LAUNCHER} and {GIGPO_LAUNCHER}"

RECIPE = (
    network_choice(f"{LAUNCHERS}: actor_rollout_ref.model.path=Qwen/Qwen2.5-VL-3B-Instruct, a pretrained "
                   f"vision-language model"),
    Choice("learning_rate", LEARNING_RATE, "CPU-scale choice (stable-baselines3 2.9.2's PPO default)", deviates=True,
           reason=f"{LAUNCHERS}: actor_rollout_ref.actor.optim.lr=1e-6 fine-tunes a pretrained 3B model; an MLP "
                  f"from scratch needs the from-scratch scale, the same as PPO's"),
    Choice("learning_rate_schedule", "constant", f"{VERL_CONFIG}: actor.optim.warmup_style: constant, "
                                                 f"lr_warmup_steps_ratio: 0."),
    Choice("optimizer", f"AdamW, betas (0.9, 0.999), weight decay {WEIGHT_DECAY}",
           f"{VERL_CONFIG}: actor.optim.weight_decay: 0.01 (verl's actor optimiser is AdamW)"),
    Choice("group_size", GROUP_SIZE, f"{LAUNCHERS}: group_size=8 (env.rollout.n)"),
    Choice("groups_per_update", GROUPS_PER_UPDATE, f"{LAUNCHERS}: train_data_size=32 (data.train_batch_size)"),
    Choice("epochs", EPOCHS, f"{VERL_CONFIG}: actor.ppo_epochs: 1"),
    Choice("minibatch_rows", MINIBATCH_ROWS, f"{LAUNCHERS}: actor_rollout_ref.actor.ppo_mini_batch_size=64, "
                                             f"which verl multiplies by env.rollout.n (8): step rows"),
    Choice("minibatch_order", "the update's rows shuffled (seeded)", "CPU-scale choice", deviates=True,
           reason=f"{VERL_CONFIG}: actor.shuffle: False splits the batch in the order verl's balance_batch "
                  f"leaves it across GPUs, which one process has no counterpart of; shuffled, every "
                  f"minibatch mixes groups"),
    Choice("clip_ratio", CLIP_RATIO, f"{VERL_CONFIG}: actor.clip_ratio_low: 0.2, clip_ratio_high: 0.2"),
    Choice("clip_ratio_c", CLIP_RATIO_C, f"{VERL_CONFIG}: actor.clip_ratio_c: 3.0 (dual-clip)"),
    Choice("loss_agg_mode", "token-mean: the mean over the minibatch's rows (one action a row)",
           f"{VERL_CONFIG}: actor.loss_agg_mode: token-mean"),
    Choice("entropy_coef", ENTROPY_COEF, f"{VERL_CONFIG}: actor.entropy_coeff: 0.001"),
    Choice("grad_clip", GRAD_CLIP, f"{VERL_CONFIG}: actor.grad_clip: 1.0"),
    Choice("kl_loss", "none", "CPU-scale choice", deviates=True,
           reason=f"{LAUNCHERS}: actor_rollout_ref.actor.use_kl_loss=True, kl_loss_coef=0.01, "
                  f"kl_loss_type=low_var_kl, towards the initial policy: a pretrained model there, random weights "
                  f"here, so the term would pull towards random play; PPO has none either"),
    Choice("invalid_action_penalty", "none", "CPU-scale choice", deviates=True,
           reason=f"{LAUNCHERS}: actor_rollout_ref.actor.use_invalid_action_penalty=True, "
                  f"invalid_action_penalty_coef=0.1 penalise a model's text that names no action; the MLP's "
                  f"output is always an action"),
    Choice("training_decoding", "sampled from the policy (temperature 1)",
           f"{VERL_CONFIG}: actor_rollout_ref.rollout.temperature: 1.0, do_sample: True"),
    Choice("validation_decoding", "greedy (the most probable action)", "CPU-scale choice", deviates=True,
           reason=f"{LAUNCHERS}: actor_rollout_ref.rollout.val_kwargs.temperature=0.4, do_sample=True; greedy, a "
                  f"pass is a function of the weights alone, with no sampling noise between passes or methods; "
                  f"the same for every method"),
)
CONTROLLED = {"rollout.group_size": GROUP_SIZE, "update_budget.groups_per_update": GROUPS_PER_UPDATE,
              "decoding.training.n": GROUP_SIZE}  # the manifest's settings
TUNED = {"learning_rate": "learning_rate", "epochs": "epochs", "minibatch_rows": "minibatch_rows"}  # grid -> recipe

Estimator = Callable[[StepRows], np.ndarray]


def policy_loss(old_log_prob: torch.Tensor, log_prob: torch.Tensor, advantages: torch.Tensor,
                clip_ratio: float = CLIP_RATIO, clip_ratio_c: float = CLIP_RATIO_C) -> torch.Tensor:
    """verl-agent's ``compute_policy_loss`` over rows of one action each: the clipped surrogate,
    bounded for negative advantages at ``clip_ratio_c`` times the advantage (dual-clip), averaged."""
    import torch

    ratio = torch.exp(log_prob - old_log_prob)
    clipped = torch.maximum(-advantages * ratio, -advantages * torch.clamp(ratio, 1 - clip_ratio, 1 + clip_ratio))
    dual = torch.minimum(-advantages * clip_ratio_c, clipped)
    return torch.where(advantages < 0, dual, clipped).mean()


@dataclass
class Episode:
    """One episode of a group while it is played: each step's observation, action,
    log-probability and reward."""

    group: int
    observations: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    log_probs: list[float] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)


def step_rows(episodes: list[Episode]) -> StepRows:
    """The episodes' steps as rows, episode after episode."""
    lengths = [len(e.actions) for e in episodes]
    return StepRows(group=np.repeat([e.group for e in episodes], lengths),
                    episode=np.repeat(np.arange(len(episodes)), lengths),
                    reward=np.array([r for e in episodes for r in e.rewards], dtype=np.float64),
                    state=np.stack([o.reshape(-1) for e in episodes for o in e.observations]))


def build(common: dict, seed: int, estimator: Estimator, config: Config | None = None) -> GroupLearner:
    """The learner of a group method with ``estimator``, on the fair shards (``common``: the
    environments' shared arguments), with a tuning grid point's ``config`` in place of the
    recipe's learning rate, epochs and minibatch rows where one is given."""
    import torch
    from stable_baselines3.common.policies import ActorCriticPolicy

    from ..integrations.gymnasium_env.env import SokobanFairnessEnv

    count = GROUPS_PER_UPDATE * GROUP_SIZE
    envs = [SokobanFairnessEnv(split="train", batch_size=GROUPS_PER_UPDATE, rollout_n=GROUP_SIZE, shard_index=i,
                               shard_count=count, **common) for i in range(count)]
    config = config or Config(LEARNING_RATE, EPOCHS, MINIBATCH_ROWS)
    policy = ActorCriticPolicy(envs[0].observation_space, envs[0].action_space, lambda _: config.learning_rate,
                               net_arch=NETWORK, optimizer_class=torch.optim.AdamW,
                               optimizer_kwargs={"betas": (0.9, 0.999), "weight_decay": WEIGHT_DECAY})
    return GroupLearner(policy, envs, estimator, seed, config.epochs, config.minibatch_rows)


class GroupLearner:
    """A group method on a stable-baselines3 policy over the environments ``envs`` (the shards of
    one draw, see the module docstring); :meth:`update` collects one update's groups and trains
    on them (``epochs`` passes in minibatches of ``minibatch_rows``), counting env steps in
    :attr:`env_steps`."""

    def __init__(self, policy, envs: list, estimator: Estimator, seed: int, epochs: int, minibatch_rows: int):
        self.policy, self.envs, self.estimator, self.seed = policy, envs, estimator, seed
        self.epochs, self.minibatch_rows = epochs, minibatch_rows
        self.env_steps = 0
        self.updates = 0

    def greedy(self, observations: np.ndarray) -> np.ndarray:
        """The most probable action of each observation."""
        return self.policy.predict(observations, deterministic=True)[0]

    def collect(self) -> list[Episode]:
        """One episode in every environment, all stepped together through the policy."""
        import torch

        episodes, observations = [], []
        for i, env in enumerate(self.envs):
            env.set_update(self.env_steps)
            observation, _ = env.reset(seed=self.seed + i if self.updates == 0 and self.env_steps == 0 else None)
            observations.append(observation)
            episodes.append(Episode(group=i // GROUP_SIZE))
        active = list(range(len(self.envs)))
        while active:
            batch = np.stack([observations[i] for i in active])
            with torch.no_grad():
                distribution = self.policy.get_distribution(self.policy.obs_to_tensor(batch)[0])
                actions = distribution.get_actions(deterministic=False)
                log_probs = distribution.log_prob(actions)
            still = []
            for i, action, log_prob in zip(active, actions.tolist(), log_probs.tolist()):
                episode = episodes[i]
                episode.observations.append(observations[i])
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
        """Collect one update's groups and take the loss's passes over their rows."""
        import torch

        episodes = self.collect()
        rows = step_rows(episodes)
        advantage = torch.as_tensor(self.estimator(rows), dtype=torch.float32)
        observations = self.policy.obs_to_tensor(np.stack([o for e in episodes for o in e.observations]))[0]
        actions = torch.as_tensor([a for e in episodes for a in e.actions])
        old = torch.as_tensor([p for e in episodes for p in e.log_probs], dtype=torch.float32)
        optimizer = self.policy.optimizer
        self.policy.set_training_mode(True)
        for _ in range(self.epochs):
            order = torch.randperm(len(actions))
            for start in range(0, len(actions), self.minibatch_rows):
                chosen = order[start:start + self.minibatch_rows]
                distribution = self.policy.get_distribution(observations[chosen])
                loss = policy_loss(old[chosen], distribution.log_prob(actions[chosen]), advantage[chosen])
                loss = loss - ENTROPY_COEF * distribution.entropy().mean()
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), GRAD_CLIP)
                optimizer.step()
        self.policy.set_training_mode(False)
        self.updates += 1

    def train_until(self, target: int, report: Callable[[int], None]) -> None:
        """Whole updates until at least ``target`` env steps are done."""
        while self.env_steps < target:
            self.update()
            report(self.env_steps)

    def close(self) -> None:
        for env in self.envs:
            env.close()

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
