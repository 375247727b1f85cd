"""The model's side of a turn: a transformers causal LM answering a batch of chats, and the turn loop.

:class:`TransformersPolicy` renders each chat with the tokenizer's own chat template (as a
server applying the model's template does for ``evaluate``), refuses a prompt over
``max_prompt_length`` tokens (verl-agent's ``data.truncation='error'``), and samples the
answers with ``model.generate``, left-padded, under ``torch.no_grad``. Each answer keeps
the token ids of its prompt and of its completion (up to and with the first end-of-sequence
token), which a GRPO step trains on.

:func:`play` is the one turn loop of training and validation: every unfinished episode
(:class:`sokoban_tools.integrations.served.turn.Episode`, verl-agent's turn) asks once a
turn, all in one batch, until each is done; what each turn showed, answered and whether
the answer was valid (verl-agent's projection) is returned per episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from ...runtime.projection import project_answer
from ..served.client import Decoding
from ..served.turn import Episode


@dataclass(frozen=True)
class Generation:
    """One answer: the prompt's and the completion's token ids, and the completion's text."""

    prompt_ids: list[int]
    completion_ids: list[int]
    text: str


class Policy(Protocol):
    def answer(self, chats: Sequence[list[dict]], decoding: Decoding) -> list[Generation]: ...


class PromptTooLong(ValueError):
    """A prompt over ``max_prompt_length`` tokens, which verl-agent refuses too."""


class TransformersPolicy:
    """``model`` (a causal LM) and its ``tokenizer``, answering ``batch_size`` chats at a time."""

    def __init__(self, model, tokenizer, max_prompt_length: int, batch_size: int = 64):
        self.model, self.tokenizer = model, tokenizer
        self.max_prompt_length, self.batch_size = max_prompt_length, batch_size

    def prompt_ids(self, chat: list[dict]) -> list[int]:
        text = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) > self.max_prompt_length:
            raise PromptTooLong(f"a prompt of {len(ids)} tokens, over max_prompt_length {self.max_prompt_length} "
                                f"(data.max_prompt_length), which verl-agent's truncation='error' refuses: raise the "
                                f"limit, or use a tokenizer that counts the turn in fewer tokens")
        return ids

    def answer(self, chats: Sequence[list[dict]], decoding: Decoding) -> list[Generation]:
        prompts = [self.prompt_ids(chat) for chat in chats]
        answers: list[Generation] = []
        for start in range(0, len(prompts), self.batch_size):
            answers += self._generate(prompts[start:start + self.batch_size], decoding)
        return answers

    def _generate(self, prompts: list[list[int]], decoding: Decoding) -> list[Generation]:
        import torch

        tokenizer = self.tokenizer
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        width = max(map(len, prompts))
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        sampling = {"do_sample": True, "temperature": decoding.temperature, "top_p": decoding.top_p,
                    "top_k": decoding.top_k if decoding.top_k != -1 else None} if decoding.do_sample else \
            {"do_sample": False}
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(input_ids=ids.to(self.model.device), attention_mask=mask.to(self.model.device),
                                          max_new_tokens=decoding.max_tokens, pad_token_id=pad, **sampling)
        finally:
            self.model.train(was_training)
        ends = self._end_tokens()
        answers = []
        for prompt, row in zip(prompts, out[:, width:].tolist()):
            end = next((i + 1 for i, token in enumerate(row) if token in ends), len(row))
            completion = row[:end]
            answers.append(Generation(prompt, completion, tokenizer.decode(completion, skip_special_tokens=True)))
        return answers

    def _end_tokens(self) -> set[int]:
        """The tokens that end an answer: the tokenizer's and the generation config's end of sequence."""
        configured = self.model.generation_config.eos_token_id
        ends = set(configured if isinstance(configured, list) else [configured]) | {self.tokenizer.eos_token_id}
        return ends - {None}


@dataclass(frozen=True)
class Turn:
    """One turn of an episode: the tokens it was shown and answered, and whether verl-agent's
    projection found a valid answer in them."""

    prompt_ids: list[int]
    completion_ids: list[int]
    valid: bool


def play(episodes: Sequence[Episode], policy: Policy, decoding: Decoding) -> list[list[Turn]]:
    """Play every episode to its end, one batched request a turn; each episode's turns."""
    turns: list[list[Turn]] = [[] for _ in episodes]
    while active := [i for i, episode in enumerate(episodes) if not episode.done]:
        answers = policy.answer([episodes[i].messages() for i in active], decoding)
        for i, answer in zip(active, answers):
            episodes[i].answer(answer.text)
            turns[i].append(Turn(answer.prompt_ids, answer.completion_ids, project_answer(answer.text)[1]))
    return turns
