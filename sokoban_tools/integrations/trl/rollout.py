"""TRL's ``rollout_func`` playing verl-agent's turn, and the reward function that reads what it played.

verl-agent trains on turns, not on chats: each turn is one sample, the turn's own fresh
prompt (the text grid with ``SimpleMemory``'s history, :mod:`sokoban_tools.integrations.
served.text_turn`) and the model's answer, scored with the episode's return (the summed
rewards of the runtime, verl-agent's ``EpisodeRewardManager``) less
``invalid_action_penalty_coef`` when that answer was invalid (``use_invalid_action_penalty``);
GRPO normalises the scores over all turn samples of a board's group
(``compute_mean_std_cross_steps``). TRL's ``GRPOTrainer`` trains one prompt and one
completion a sample, so :class:`VerlAgentRollout` gives each board
``num_generations`` = ``env.rollout.n`` x ``env.max_steps`` slots: episode ``e``'s turn ``t``
is slot ``e * env.max_steps + t``. A turn an episode did not reach (it was won earlier) is
a slot of one end-of-sequence token, masked out of the loss (``env_mask``) and scored
``None``, which TRL leaves out of the group's mean and standard deviation, so the
advantages are verl-agent's (but for the epsilon under the standard deviation).

TRL hands the function the prompts only: the board is found from its first turn
(:class:`~.dataset.PromptBoards`). Each finished episode is logged as a training record of
the update it trains (:class:`~.run.TrlRun`).
"""

from __future__ import annotations

import time
from typing import Sequence

from ..served.text_turn import TEXT_MODE
from ..served.turn import Episode
from .dataset import PromptBoards, prompt_key
from .policy import Policy, TransformersPolicy, Turn, play
from .run import TrlRun

TURN_REWARD = "turn_reward"  # the extra field the rollout returns and verl_agent_reward reads


def verl_agent_reward(completions, turn_reward, **_) -> list[float | None]:
    """TRL's reward function: each slot's reward as :class:`VerlAgentRollout` scored it (``None``
    for a turn no episode reached)."""
    return list(turn_reward)


class VerlAgentRollout:
    """``rollout_func(prompts, trainer)`` for ``GRPOTrainer``; see the module docstring. ``policy``
    answers the turns (default: the trainer's model and tokenizer)."""

    def __init__(self, run: TrlRun, boards: PromptBoards, policy: Policy | None = None):
        if boards.history_length != run.settings.history_length:
            raise ValueError(f"the dataset's prompts show history {boards.history_length}, the run's turn "
                             f"{run.settings.history_length}: make both with one history length")
        self.run, self.boards, self.policy = run, boards, policy

    def __call__(self, prompts: Sequence[list[dict]], trainer) -> dict:
        settings = self.run.settings
        slots = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        if slots != settings.slots or len(prompts) % slots:
            raise ValueError(f"GRPOConfig.num_generations is {slots} but a board's group is {settings.slots} slots "
                             f"(env.rollout.n {settings.group_size} x env.max_steps {settings.horizon}): make the "
                             f"config with grpo_config()")
        episodes = []
        for start in range(0, len(prompts), slots):
            block = prompts[start:start + slots]
            if any(prompt_key(prompt) != prompt_key(block[0]) for prompt in block):
                raise ValueError("a group's prompts differ: GRPOTrainer must repeat each board num_generations times "
                                 "in a row (its sampler does; keep shuffle_dataset=False)")
            row = self.boards.row(block[0])
            episodes += [Episode(row, settings.horizon, TEXT_MODE, settings.history_length)
                         for _ in range(settings.group_size)]
        self.run.update = trainer.state.global_step + 1  # the update these episodes train
        started = time.monotonic()
        turns = play(episodes, self.policy or self.trainer_policy(trainer), settings.training)
        self.run.record_training([self.run.training_record(episode) for episode in episodes])
        output = self.slots(episodes, turns, trainer.processing_class.eos_token_id)
        self.run.add_costs({"rollout": ("seconds", time.monotonic() - started),
                            "prompt_tokens": ("tokens", sum(len(t.prompt_ids) for ts in turns for t in ts)),
                            "completion_tokens": ("tokens", sum(len(t.completion_ids) for ts in turns for t in ts))})
        return output

    def trainer_policy(self, trainer) -> TransformersPolicy:
        model = trainer.accelerator.unwrap_model(trainer.model)
        return TransformersPolicy(model, trainer.processing_class, self.run.settings.max_prompt_length)

    def slots(self, episodes: list[Episode], turns: list[list[Turn]], eos: int) -> dict:
        """TRL's output: every episode's turns in its ``env.max_steps`` slots, the rest masked."""
        coef = self.run.settings.invalid_action_penalty_coef
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": None, "env_mask": [], TURN_REWARD: []}
        for episode, played in zip(episodes, turns):
            episode_return = episode.env.tally.total
            for slot in range(self.run.settings.horizon):
                if slot < len(played):
                    turn = played[slot]
                    out["prompt_ids"].append(turn.prompt_ids)
                    out["completion_ids"].append(turn.completion_ids)
                    out["env_mask"].append([1] * len(turn.completion_ids))
                    out[TURN_REWARD].append(episode_return - (0.0 if turn.valid else coef))
                else:
                    out["prompt_ids"].append([eos])
                    out["completion_ids"].append([eos])
                    out["env_mask"].append([0])
                    out[TURN_REWARD].append(None)
        return out
