"""``SokobanFairness-v1`` for batched learners: all B environments stepped at once as arrays.

    import gymnasium, sokoban_tools.integrations.gymnasium_env
    envs = gymnasium.make_vec("SokobanFairnessVector-v1", num_envs=256, observation="grid")

:class:`SokobanFairnessVectorEnv` is a :class:`gymnasium.vector.VectorEnv` that plays what
``gymnasium.make_vec("SokobanFairness-v1", num_envs=B, ...)`` plays (B shards of
:class:`~.env.SokobanFairnessEnv` in Gymnasium's ``SyncVectorEnv``), step for step: the same
boards in the same order, the same observations, rewards, terminations, truncations and
infos, and the same bytes in the episode log, with the same refusals. It takes the same
arguments (``split``, ``observation``, ``max_steps``, ``batch_size``, ``rollout_n``,
``episode_log``, ``method``, ``run``, ``update``, ``settings``, ``trained``, ``schedule``,
``notes``, ``tuning``, ...; see :mod:`.env`). Instead of B Python environments it keeps B positions in
one :class:`sokoban_tools.runtime.batch.BoardBatch`, so a step costs a few dozen numpy
operations whatever B is; ``tests/test_vector_env.py`` checks it against the shards over
more than 100,000 random steps, and replays verl-agent's recorded traces through the batch.

Autoreset: Gymnasium 1.x's ``AutoresetMode.NEXT_STEP`` by default, as ``SyncVectorEnv``: the
step that ends an environment's episode returns its last observation; the next ``step``
ignores that environment's action, starts its next board and returns the board's first
observation with reward 0, ``terminated`` and ``truncated`` false and the reset's info (so
a learner should not count it as an env step). With ``autoreset_mode="SameStep"``
(``AutoresetMode.SAME_STEP``) the ending step starts the next board at once and returns its
first observation, the last one in ``infos["final_obs"]`` and the step's info in
``infos["final_info"]``; every step is then an env step of every environment.
``AutoresetMode.DISABLED`` is not offered (its ``reset_mask`` option is refused).

Differences from the shards: ``reset()`` resets every environment (there is no
``reset_mask``); ``reset()`` without a seed, the first time, seeds one training sampler from
the vector's own generator for all environments (the shards each seed their own, so
they do not share draws); ``render_mode`` is not offered. ``set_update(n)`` (or
``reset(options={"update": n})``) labels every environment's episodes from its next reset.
:meth:`~SokobanFairnessVectorEnv.state_dict` and :meth:`~SokobanFairnessVectorEnv.load_state_dict`
keep and restore everything a checkpoint needs to play on exactly.
"""

from __future__ import annotations

from functools import lru_cache

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from ...checks import integer
from ...protocol import DEFAULT_MAX_STEPS
from ...records.episodes import EpisodeTally, episode_writer
from ...runtime.batch import BoardBatch, BoardTable
from ...runtime.sampler import TrainingSampler
from . import threads
from .env import GRID_CLASSES, SokobanFairnessEnv, _boards, _logged_boards

VECTOR_ENV_ID = "SokobanFairnessVector-v1"
AUTORESET_MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
_CLASSES = np.arange(len(GRID_CLASSES), dtype=np.uint8)[None, :, None]
NONE = -1  # no update pending


@lru_cache(maxsize=8)
def _table(split: str, dataset_dir: str | None, hub_revision: str | None, tuning: bool) -> BoardTable:
    """A split's boards (of a tuning run's, with ``tuning``) as a :class:`BoardTable`, built once per process."""
    rows, _ = _boards(split, dataset_dir, hub_revision, tuning)
    return BoardTable([row.board for row in rows])


class SokobanFairnessVectorEnv(gymnasium.vector.VectorEnv):
    """B environments of ``SokobanFairness-v1`` stepped as arrays; see the module docstring."""

    def __init__(self, num_envs: int = 1, split: str = "train", observation: str = "rgb",
                 max_steps: int = DEFAULT_MAX_STEPS, batch_size: int | None = None, rollout_n: int = 1,
                 dataset_dir=None, hub_revision: str | None = None, episode_log=None, method: str = "gymnasium",
                 run: str = "0", update: int | None = None, settings: dict | None = None, trained: bool = True,
                 schedule=None, notes: dict | None = None, autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                 max_episode_steps: int | None = None, render_mode: str | None = None,
                 tuning: bool = False):
        self.num_envs = integer("num_envs", num_envs, 1)
        if max_episode_steps is not None and max_episode_steps < max_steps:
            raise ValueError(f"max_episode_steps={max_episode_steps} would cut episodes before the horizon of "
                             f"{max_steps} turns, and a cut episode is neither verl-agent's nor logged; leave it out "
                             f"(the environment truncates at max_steps itself) or set max_steps={max_episode_steps}")
        if render_mode is not None:
            raise ValueError(f"render_mode: the vector draws no frames (got {render_mode!r}); its observations are "
                             f"the images with observation='rgb'")
        mode = AutoresetMode(autoreset_mode) if not isinstance(autoreset_mode, AutoresetMode) else autoreset_mode
        if mode not in AUTORESET_MODES:
            raise ValueError(f"autoreset_mode must be one of {', '.join(m.value for m in AUTORESET_MODES)}, got "
                             f"{mode.value!r}")
        self.autoreset_mode = mode
        self.metadata = {"autoreset_mode": mode}
        # environment 0 of the shards: every argument is checked (and refused) as the shards check it
        self.single = SokobanFairnessEnv(split=split, max_steps=max_steps, batch_size=batch_size, shard_index=0,
                                         shard_count=self.num_envs, dataset_dir=dataset_dir,
                                         hub_revision=hub_revision, method=method, run=run, update=update,
                                         observation=observation, rollout_n=rollout_n, schedule=schedule,
                                         notes=notes, tuning=tuning)
        single = self.single
        self.split, self.observation, self.max_steps = split, observation, single.max_steps
        self.rows, self.sha256, self.method, self.run = single.rows, single.sha256, single.method, single.run
        self.single_observation_space, self.single_action_space = single.observation_space, single.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.task_ids = np.array([row.task_id for row in self.rows], dtype=object)
        self.batch = BoardBatch(_table(split, None if dataset_dir is None else str(dataset_dir), hub_revision, tuning),
                                self.num_envs, self.max_steps)
        n = self.num_envs
        self._slots = np.arange(n)
        self._turns = np.zeros(n, np.int64)
        self._over = np.ones(n, bool)  # no episode under way (none yet, or it ended)
        self._started = np.zeros(n, bool)
        self._autoreset = np.zeros(n, bool)
        self._returns = np.zeros(n, np.float64)
        self._moves = np.zeros((n, self.max_steps), np.int64)
        self._update = np.full(n, single.update, np.int64)
        self._pending = np.full(n, NONE, np.int64)
        self._progress_given = np.full(n, update is not None)
        self.cut_episodes = 0  # training episodes abandoned unlogged by a reset before their end
        # training: one sampler's draws, environment i playing positions i, i + n, ... of each
        draw_size = single.batch_size * single.rollout_n
        self._shard = np.array([len(range(i, draw_size if split == "train" else len(self.rows), n))
                                for i in range(n)], np.int64)  # each environment's boards of a draw (or a pass)
        self._sampler: TrainingSampler | None = None
        self._draws = np.zeros((0, draw_size), np.int64)  # the draws still in play, from number _first
        self._first = 0
        self._episode = np.zeros(n, np.int64)  # episodes started since the sampler was seeded (validation: in the pass)
        self._draw = np.zeros(n, np.int64)  # the draw of each environment's episode
        # validation passes
        self._in_pass = np.zeros(n, bool)
        self._passes_begun = np.zeros(n, bool)
        self._passes: list[set[int]] = [set() for _ in range(n)]
        self.episode_log = single.episode_log
        self._writer = None
        if episode_log is not None:
            manifest = single.manifest(settings or {}, trained)  # refused before the log is touched
            self._writer = episode_writer(episode_log)
            self.episode_log = self._writer.path
            self._writer.write_manifest(manifest, episode_log)  # once for the train and validation vectors

    # -- the learner's progress

    def set_update(self, update: int) -> None:
        """Label every environment's episodes from its next reset on with ``update`` (see :mod:`.env`)."""
        self._pending[:] = integer("update", update, 0)
        threads.warn_once()  # a learner is driving the environments: say what its torch threads cost

    # -- reset

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset every environment: ``seed`` seeds the training sampler (all environments share its
        draws) or starts the validation pass again; ``options={"update": n}`` labels the episodes."""
        options = dict(options or {})
        if "update" in options:
            self.set_update(options.pop("update"))
        if options:
            raise ValueError(f"reset options: unknown keys {sorted(options)}; the one option is 'update' (the "
                             f"vector resets every environment: there is no reset_mask)")
        if seed is not None:
            seed = integer("seed", seed, 0)
        super().reset(seed=seed)
        self._check_cut(seed)
        self._autoreset[:] = False
        self._start(self._slots, seed)
        observations = self._observe()
        return observations, self._reset_info(self._slots, {})

    def _check_cut(self, seed: int | None) -> None:
        """Refuse a reset that would drop a logged episode under way (see :mod:`.env`), before
        anything changes; count the training episodes abandoned."""
        unfinished = self._slots[self._started & ~self._over]
        if not len(unfinished):
            return
        if self.split == "train":
            self.cut_episodes += int(np.count_nonzero(self._turns[unfinished]))
            return
        again = unfinished[self._in_pass[unfinished] & (self._turns[unfinished] == 0)
                           & (self._pending[unfinished] == NONE)]
        for i in unfinished if self._writer is not None else ():
            relabelled = self._pending[i] != NONE
            if self._in_pass[i] and self._turns[i]:
                raise RuntimeError(f"environment {i}: the episode on board {self.task_ids[self.batch.board[i]]} was "
                                   f"cut at turn {self._turns[i]} of its {self.max_steps}, before it ended, so it "
                                   f"cannot be logged to {self.episode_log}: reset() only when every environment's "
                                   f"episode has ended")
            if not self._in_pass[i] and seed is None and not relabelled:
                raise RuntimeError(f"environment {i} has played its boards of the validation pass at update "
                                   f"{self._update[i]} and was playing on: this reset() starts another pass, "
                                   f"which would be logged under the same update and so dropped; label it first: "
                                   f"reset(options={{'update': n}}) or set_update(n)")
        if seed is None:
            self._episode[again] -= 1  # reset before a move: the same board, still to play

    def _start(self, slots: np.ndarray, seed: int | None = None) -> None:
        """Start the next episode of the environments ``slots`` (their labels, their boards)."""
        relabelled = slots[self._pending[slots] != NONE]
        if self.split != "train" and seed is None and self._writer is not None:
            self._refuse_partial_pass(relabelled)
        if len(relabelled):
            self._update[relabelled] = self._pending[relabelled]
            self._pending[relabelled] = NONE
            self._progress_given[relabelled] = True
        if self.split == "train":
            boards = self._training_boards(slots, seed)
        else:
            beginning = slots if seed is not None else np.union1d(relabelled, slots[~self._passes_begun[slots]])
            if len(beginning):
                self._begin_pass(beginning)
            boards = self._validation_boards(slots)
        self.batch.start(slots, boards)
        self._turns[slots], self._returns[slots] = 0, 0.0
        self._over[slots], self._started[slots] = False, True

    def _refuse_partial_pass(self, relabelled: np.ndarray) -> None:
        """A new label for an environment that has logged some but not all of its share of the
        current pass would leave that pass partial in the log, as in :mod:`.env`: refused, the
        label dropped, before anything is written."""
        partial = relabelled[(self._episode[relabelled] > 0) & (self._episode[relabelled] < self._shard[relabelled])]
        if len(partial):
            i = int(partial[0])
            done, share = int(self._episode[i]), int(self._shard[i])
            self._pending[relabelled] = NONE
            raise RuntimeError(f"environment {i} has logged {done} of its {share} boards of the validation pass at "
                               f"update {self._update[i]} in {self.episode_log}; a new label now would leave that "
                               f"pass partial, which score refuses: finish the pass first ({share - done} more "
                               f"episodes here), then label the next one; the label was not taken")

    def _begin_pass(self, slots: np.ndarray) -> None:
        """Start a validation pass in ``slots``; one whose label the log already holds for any of an
        environment's boards is refused before anything is written, whichever process wrote it
        (as :mod:`.env` refuses it)."""
        if self._writer is not None:
            logged = _logged_boards(self.episode_log)
            for i in slots:
                held = logged.get((self.method, self.run, int(self._update[i])), set())
                share = [self.task_ids[board] for board in range(int(i), len(self.rows), self.num_envs)]
                if int(self._update[i]) in self._passes[i] or any(task in held for task in share):
                    raise RuntimeError(
                        f"a validation pass of method {self.method!r}, run {self.run!r} at update {self._update[i]} "
                        f"is already in {self.episode_log} (environment {i}), written by this or an earlier "
                        f"process: nothing was written. Label each pass with its own update before its first "
                        f"reset (reset(options={{'update': n}}) or set_update(n)), or give another episode_log")
        self._passes_begun[slots] = True
        self._episode[slots] = 0

    def _validation_boards(self, slots: np.ndarray) -> np.ndarray:
        """Environment i's boards i, i + n, ... once (logged), then again (not logged)."""
        episode, shard = self._episode[slots], self._shard[slots]
        self._in_pass[slots] = episode < shard
        self._episode[slots] += 1
        return slots + episode % shard * self.num_envs

    def _training_boards(self, slots: np.ndarray, seed: int | None) -> np.ndarray:
        """Each environment's next position of the sampler's draws (see :mod:`.env`)."""
        if seed is not None or self._sampler is None:
            base = seed if seed is not None else int(self.np_random.integers(2 ** 62))
            ids = [row.task_id for row in self.rows]
            self._sampler = TrainingSampler(ids, self.single.batch_size, self.single.rollout_n, base)
            self._draws, self._first, self._episode[:] = self._draws[:0], 0, 0
        episode, shard = self._episode[slots], self._shard[slots]
        draw = episode // shard
        self._episode[slots] += 1
        self._draw[slots] = draw
        needed = int(draw.max()) + 1 - self._first
        if needed > len(self._draws):
            fresh = [self._sampler.next_batch().task_indices for _ in range(needed - len(self._draws))]
            self._draws = np.concatenate([self._draws, np.stack(fresh)])
        oldest = int(self._draw.min())  # no environment plays an earlier draw again
        if oldest > self._first:
            self._draws, self._first = self._draws[oldest - self._first:], oldest
        return self._draws[draw - self._first, slots + episode % shard * self.num_envs]

    # -- step

    def step(self, actions):
        actions = self._checked(actions)
        resetting = self._autoreset
        if resetting.any():
            actions = np.where(resetting, 0, actions)
        stepping = ~resetting
        if (self._over & stepping).any():
            raise RuntimeError("an environment has no episode under way: call reset() first")
        moves = self._moves
        moves[self._slots, np.minimum(self._turns, self.max_steps - 1)] = actions
        reward, _, won, effective = self.batch.play(actions)
        self._turns += stepping
        np.add(self._returns, reward, out=self._returns, where=stepping)
        terminated = won & stepping
        truncated = stepping & ~terminated & (self._turns >= self.max_steps)
        ended = terminated | truncated
        self._over |= ended
        if self._writer is not None and ended.any():
            self._record(self._slots[ended], terminated)
        infos = {}
        step_info = stepping
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            final = self._observe()
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in self._slots[ended]:
                final_obs[i] = final[i]
            infos["final_obs"], infos["_final_obs"] = final_obs, ended.copy()
            infos["final_info"] = self._step_info(ended, won, effective)
            infos["_final_info"] = ended.copy()
            step_info = stepping & ~ended
            resetting = ended
        infos.update(self._step_info(step_info, won, effective))
        if resetting.any():
            slots = self._slots[resetting]
            self._start(slots)
            reward = np.where(resetting, 0.0, reward) if self.autoreset_mode == AutoresetMode.NEXT_STEP else reward
            infos = self._reset_info(slots, infos)
        observations = self._observe()
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._autoreset = ended
        return observations, reward, terminated, truncated, infos

    def _checked(self, actions) -> np.ndarray:
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or actions.dtype.kind not in "iu":
            raise ValueError(f"actions must be {self.num_envs} integers 0-4 (one per environment), got an array of "
                             f"shape {actions.shape} and dtype {actions.dtype}")
        if actions.size and (actions.min() < 0 or actions.max() > 4):
            bad = int(np.flatnonzero((actions < 0) | (actions > 4))[0])
            raise ValueError(f"environment {bad}: action must be 0-4, got {actions[bad]}")
        return actions.astype(np.int64, copy=False)

    def _record(self, slots: np.ndarray, terminated: np.ndarray) -> None:
        """The ended episodes' records, in environment order, in one append (the shards' bytes)."""
        validation = self.split == "validation"
        records, shares_done = [], False
        for i in slots.tolist():
            if validation:
                if not self._in_pass[i]:
                    continue  # playing on past its share of the pass
                self._passes[i].add(int(self._update[i]))
                shares_done = shares_done or self._episode[i] == self._shard[i]
            label = self._update[i] if validation or self._progress_given[i] else self._draw[i]
            tally = EpisodeTally(self._moves[i, :self._turns[i]].tolist(), float(self._returns[i]),
                                 bool(terminated[i]), True)
            records.append(tally.record(self.method, self.run, "validation" if validation else "training",
                                        int(label), self.task_ids[self.batch.board[i]],
                                        self.sha256 if validation else None))
        if records:
            self._writer.append(records)
        if shares_done:
            self._writer.sync()  # an environment's share of the pass is in: on disk before a checkpoint counts it

    # -- observations and infos

    def _observe(self) -> np.ndarray:
        states = self.batch.states()
        if self.observation == "rgb":
            return self.batch.images(states)
        one_hot = (states[:, None, :] == _CLASSES).view(np.uint8)
        return one_hot.reshape(self.num_envs, *self.single_observation_space.shape)

    def _step_info(self, mask: np.ndarray, won: np.ndarray, effective: np.ndarray) -> dict:
        if not mask.any():
            return {}
        task_id = np.full(self.num_envs, None, dtype=object)
        task_id[mask] = self.task_ids[self.batch.board[mask]]
        return {"task_id": task_id, "_task_id": mask.copy(), "won": won & mask, "_won": mask.copy(),
                "action_is_effective": effective & mask, "_action_is_effective": mask.copy()}

    def _reset_info(self, slots: np.ndarray, infos: dict) -> dict:
        """``infos`` with the reset's info of ``slots`` (task, board, and in validation whether it is logged)."""
        mask = np.zeros(self.num_envs, bool)
        mask[slots] = True
        task_id = infos.get("task_id")
        if task_id is None:
            task_id = np.full(self.num_envs, None, dtype=object)
        task_id[slots] = self.task_ids[self.batch.board[slots]]
        infos["task_id"], infos["_task_id"] = task_id, infos.get("_task_id", np.zeros(self.num_envs, bool)) | mask
        board = np.zeros(self.num_envs, np.int64)
        board[slots] = self.batch.board[slots]
        infos["board"], infos["_board"] = board, mask
        if self.split == "validation":
            infos["logged"] = self._in_pass & mask & (self._writer is not None)
            infos["_logged"] = mask.copy()
        return infos

    # -- checkpoints

    _ARRAYS = ("_turns", "_over", "_started", "_autoreset", "_returns", "_moves", "_update", "_pending",
               "_progress_given", "_episode", "_draw", "_in_pass", "_passes_begun", "_draws")

    def state_dict(self) -> dict:
        """What a checkpoint keeps to continue this vector exactly: every environment's position,
        episode so far, labels and place in the draws or the pass, and the sampler."""
        return {"arrays": {name: getattr(self, name).copy() for name in self._ARRAYS},
                "positions": {name: getattr(self.batch, name).copy() for name in ("board", "player", "box", "steps")},
                "passes": [sorted(passes) for passes in self._passes], "first": self._first,
                "cut_episodes": self.cut_episodes,
                "sampler": None if self._sampler is None else self._sampler.state_dict(),
                "np_random": None if self._np_random is None else self._np_random.bit_generator.state}

    def load_state_dict(self, state: dict) -> np.ndarray:
        """Continue from :meth:`state_dict` (of a vector made with the same arguments); returns the
        observations of the episodes under way."""
        if len(state["arrays"]["_turns"]) != self.num_envs:
            raise ValueError(f"the state is of a vector of {len(state['arrays']['_turns'])} environments, this one "
                             f"has {self.num_envs}")
        for name in self._ARRAYS:
            setattr(self, name, state["arrays"][name].copy())
        for name, values in state["positions"].items():
            setattr(self.batch, name, values.copy())
        self._passes = [set(passes) for passes in state["passes"]]
        self._first, self.cut_episodes = state["first"], state["cut_episodes"]
        ids = [row.task_id for row in self.rows]
        self._sampler = None if state["sampler"] is None else TrainingSampler.from_state_dict(ids, state["sampler"])
        if state["np_random"] is not None:
            self.np_random.bit_generator.state = state["np_random"]
        return self._observe()

    def close_extras(self, **kwargs) -> None:
        """Release the episode log (its lock goes with the last user in the process)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self.single.close()


def make_vector_env(num_envs: int = 1, **kwargs) -> SokobanFairnessVectorEnv:
    """``gymnasium.make_vec("SokobanFairnessVector-v1", num_envs, ...)``'s vector."""
    return SokobanFairnessVectorEnv(num_envs=num_envs, **kwargs)
