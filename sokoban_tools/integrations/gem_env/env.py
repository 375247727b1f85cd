"""The stored boards as a GEM environment, for text-LLM trainers (GEM, ROLL, OpenRLHF, Oat, verl).

:class:`SokobanFairnessGemEnv` is a ``gem.Env``: ``reset(seed)`` returns the text
observation and an info dict, ``step(answer_text)`` returns ``(observation, reward,
terminated, truncated, info)``. What the model reads and how its answer is played are
verl-agent's text turn, the one ``evaluate --mode tiny_rgb_array`` plays:

* the observation is ``SokobanEnvironmentManager.build_text_obs``'s text in
  ``tiny_rgb_array`` mode (:mod:`sokoban_tools.integrations.served.text_turn`): the prompt
  with the board's text grid, and after the first turn the steps taken and
  ``SimpleMemory``'s last ``history_length`` grids and actions (default 2, verl-agent's
  ``env.history_length``; 0 for none);
* the action is the model's whole answer, projected as verl-agent projects it (the word
  in ``<action>up</action>``: up, down, left, right; anything else is action 0, which
  spends a turn and moves nothing); ``info`` names the action played and whether the
  answer was valid;
* rewards and the horizon are the runtime's (verl-agent's): ``terminated`` when the box
  is on its target, ``truncated`` after ``max_steps`` turns (15).

Boards come from :class:`sokoban_tools.integrations.gymnasium_env.env.SokobanFairnessEnv`
underneath (the same checked files, sampler, sharding, episode log and manifest):

* ``split="validation"``: ``reset(seed=i)`` plays board ``i`` of the 256 in stored order;
  ``reset()`` plays the next board of the environment's shard;
* ``split="train"``: the fair sampler (:class:`sokoban_tools.runtime.sampler.TrainingSampler`),
  ``reset(seed=s)`` seeding it, ``reset()`` continuing its draws.

GEM's own vector (``gem.make_vec([id] * n, shard_count=n)``) gives environment ``i`` the
constructor seed ``i`` (its ``seed`` argument, default 0, plus ``i``), which is its shard:
it plays boards ``i, i + n, ...``, so ``256 / n`` episodes of each environment (the vector
resets a finished one by itself) are one pass over the 256 boards, each once; reset with
seed ``s`` in training, environment ``i`` gets ``s + i`` and plays positions ``i, i + n,
...`` of each draw of the sampler seeded ``s``. With ``episode_log`` every finished
episode is an :class:`sokoban_tools.records.episodes.EpisodeRecord` in the log (a
validation board once per ``update``) and the run manifest beside it records the text
observation and the history length.
"""

from __future__ import annotations

import random
from pathlib import Path

import gem

from ...checks import integer
from ...protocol import DEFAULT_MAX_STEPS
from ...records.episodes import writing
from ...runtime.projection import project_answer
from ..gymnasium_env.env import SokobanFairnessEnv
from ..served.prompt import TEXT_PROMPT_NO_HISTORY_SHA256, TEXT_PROMPT_SHA256, UPSTREAM_COMMIT
from ..served.text_turn import ACTION_LOOKUP, TEXT_MODE, TextTurn

ENV_IDS = {"validation": "sokoban-fairness:validation", "train": "sokoban-fairness:train"}
ACTION_WORDS = ("up", "down", "left", "right")  # the prompt's admissible actions


class _StoredBoards(SokobanFairnessEnv):
    """The Gymnasium environment's boards, logged as a text turn: its manifest names the
    text observation, and ``reset(seed=i)`` in validation plays board ``i``."""

    def __init__(self, history_length: int, env_id: str, **kwargs):
        self.history_length, self.env_id = history_length, env_id
        super().__init__(**kwargs)

    def played_settings(self) -> dict:
        return {**super().played_settings(), "image_processing.observation": TEXT_MODE,
                "image_processing.history_length": self.history_length}

    def manifest_notes(self) -> dict:
        return {"trainer": "gem", "env_id": self.env_id,
                "prompt": f"verl-agent {UPSTREAM_COMMIT[:12]} SOKOBAN_TEMPLATE_NO_HIS (sha256 "
                          f"{TEXT_PROMPT_NO_HISTORY_SHA256}) on the first turn, then SOKOBAN_TEMPLATE (sha256 "
                          f"{TEXT_PROMPT_SHA256}) with the last {self.history_length} grids and actions",
                "actions": "the answer text, projected as verl-agent projects it: <action>up|down|left|right"
                           "</action>; anything else is action 0 (a turn spent, nothing moves)"}

    def _next_validation_board(self, seed: int | None) -> int:
        if seed is None:
            return super()._next_validation_board(None)
        if not 0 <= seed < len(self.rows) or seed % self.shard_count != self.shard_index:
            raise ValueError(f"seed {seed}: in validation the seed is the board's place in stored order, 0-"
                             f"{len(self.rows) - 1}, and in shard {self.shard_index} of {self.shard_count} one of "
                             f"{self.shard_index}, {self.shard_index + self.shard_count}, ...")
        self._next = seed + self.shard_count
        return seed


class SokobanFairnessGemEnv(gem.Env):
    """The stored boards under verl-agent's text turn as a GEM environment; see the module docstring."""

    def __init__(self, split: str = "validation", history_length: int = 2, max_steps: int = DEFAULT_MAX_STEPS,
                 shard_count: int = 1, shard_index: int | None = None, seed: int = 0, batch_size: int | None = None,
                 dataset_dir: str | Path | None = None, hub_revision: str | None = None,
                 episode_log: str | Path | None = None, method: str = "gem", run: str = "0", update: int = 0,
                 settings: dict | None = None, trained: bool = True):
        super().__init__()
        history_length = integer("history_length (verl-agent's env.history_length)", history_length)
        if shard_index is None:
            shard_index = _shard_of_seed(seed, shard_count, episode_log)
        self.history_length = history_length
        self.boards = _StoredBoards(history_length, ENV_IDS.get(split, split), split=split, max_steps=max_steps,
                                    batch_size=batch_size, shard_index=shard_index, shard_count=shard_count,
                                    dataset_dir=dataset_dir, hub_revision=hub_revision, episode_log=episode_log,
                                    method=method, run=run, update=update, settings=settings, trained=trained)
        self.turn: TextTurn | None = None

    @property
    def update(self) -> int:
        """The training update a validation pass's records are labelled with; a learner sets it."""
        return self.boards.update

    @update.setter
    def update(self, value: int) -> None:
        self.boards.update = value

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        # no global seeding (gem.Env.reset's): the boards' only randomness is the sampler, seeded here
        if seed is not None:  # True is no board and no sampler seed, though Python counts it an int
            seed = integer("seed (the board's place in validation, the sampler's seed in training)", seed)
        _, info = self.boards.reset(seed=seed)
        self.turn = TextTurn(self.history_length)
        return self.turn.text(self.boards.board), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        if self.turn is None:
            raise RuntimeError("no episode yet: call reset()")
        if not isinstance(action, str):
            raise TypeError(f"the action is the model's answer text, got {type(action).__name__}")
        played, valid = project_answer(action)
        shown = self.boards.board
        _, reward, terminated, truncated, info = self.boards.step(played)
        self.turn.played(shown, played)
        info = {**info, "action": ACTION_LOOKUP[played], "action_is_valid": bool(valid)}
        return self.turn.text(self.boards.board), reward, terminated, truncated, info

    def sample_random_action(self) -> str:
        return f"<think>a random move</think><action>{random.choice(ACTION_WORDS)}</action>"

    def close(self) -> None:
        self.boards.close()


def _shard_of_seed(seed: int, shard_count, episode_log) -> int:
    """The shard GEM's ``make_vec`` means: environment ``i`` gets the constructor seed ``seed + i``.

    With an ``episode_log``, shard ``k > 0`` is taken only once an earlier environment of this
    process writes that log: a vector built with ``make_vec(..., seed=1)`` starts at shard 1 and
    would be refused at its last environment (seed ``shard_count``) after the others had
    written the manifest and taken the lock; its first environment is refused instead, before
    anything is written."""
    shard_count = integer("shard_count (the environments of the vector, one shard each)", shard_count, 1)
    if shard_count == 1:
        return 0
    fix = ("gem.make_vec gives environment i the seed seed + i, so build the vector with make_vec's default "
           "seed=0 (or pass shard_index to each environment through vec_kwargs)")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < shard_count:
        raise ValueError(f"seed {seed!r} is no shard of {shard_count}: {fix}")
    if seed and episode_log is not None and not writing(episode_log):
        raise ValueError(f"seed {seed} would be the first environment to write {episode_log}, as shard {seed} of "
                         f"{shard_count}, so shards 0-{seed - 1} would have no environment: {fix}")
    return seed
