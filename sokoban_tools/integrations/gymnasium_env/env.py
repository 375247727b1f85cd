"""The stored boards as a Gymnasium environment, for pixel-based learners (PPO, DQN, ...).

:class:`SokobanFairnessEnv` plays :class:`sokoban_tools.runtime.env.FairSokobanEnv`, the
runtime environment with verl-agent's rules and rewards, behind Gymnasium's API:

* observations: the 96x96 RGB game image, ``Box(0, 255, (96, 96, 3), uint8)`` (the default),
  or with ``observation="grid"`` the cells' classes as a one-hot ``Box(0, 1, (7, 6, 6), uint8)``
  (:data:`GRID_CLASSES`: wall, floor, target, box on target, box, player, player on target):
  what the image shows and nothing more, for a small learner that need not decode 16x16 tiles;
* actions: ``Discrete(5)`` numbered as verl-agent numbers them: 0 no-op (verl-agent's
  "no valid answer": nothing moves, the turn is spent, -0.1), 1 up, 2 down, 3 left, 4 right;
* an episode ends ``terminated`` when the box is on its target, ``truncated`` after
  ``max_steps`` turns (15, verl-agent's horizon; a no-op spends one), so a uniformly random
  policy is the ``outputs_0_4`` policy of ``fairness/baselines.json``. The environment
  truncates by itself: with ``episode_log``, an episode cut short from outside (Gymnasium's
  ``TimeLimit``, ``gymnasium.make(..., max_episode_steps=k)`` with ``k`` below ``max_steps``,
  or a ``reset()`` before the end) would be missing from the log, so the ``reset()`` after
  it is refused, naming the board and the turn; ``make_vec``'s ``max_episode_steps`` below
  ``max_steps`` is refused when the vector is built (at or above it, it changes nothing);
* ``render_mode``: ``"rgb_array"`` (the image) or ``"ansi"`` (the text grid);
  ``gymnasium.make(..., render_mode="human")`` shows the image through Gymnasium's
  ``HumanRendering`` (needs pygame).

Boards, by ``split``:

* ``"train"``: drawn by :class:`sokoban_tools.runtime.sampler.TrainingSampler` from the
  5,000 training boards, ``batch_size`` distinct boards per draw (default all 5,000: a
  fresh random order of the whole pool each time), seeded by ``reset(seed=s)``;
  ``reset()`` without a seed continues the draws (the first one seeds the sampler from
  the environment's ``np_random``);
* ``"validation"``: the 256 boards once each in stored order; ``reset(seed=...)``
  starts the pass again from its first board, and after the last board the pass starts over.

With ``tuning=True`` (a tuning run, ``train --tuning``) both splits come from the training
pool cut by :mod:`sokoban_tools.records.tuning_split`: ``"train"`` draws from the 4,744 boards
not held out, ``"validation"`` plays the 256 held-out tuning boards once each in stored order,
and the manifest records the run as a tuning run (its ``tuning`` entry), which ``score``,
``compare`` and ``leaderboard`` refuse: no validation board is ever played.

In a vector of ``n`` from ``gymnasium.make_vec`` (the registered ``vector_entry_point``),
environment ``i`` is shard ``i`` of ``n``: in validation it plays boards ``i, i + n, ...``
(so ``n`` environments playing ``256 / n`` episodes each make one pass; a vector of more
than 256 is refused when it is built, since its last environments would have no board), in training it
plays positions ``i, i + n, ...`` of each draw of a sampler seeded ``s`` when the vector is
reset with seed ``s`` (Gymnasium gives environment ``i`` the seed ``s + i``), so the vector
plays each draw's boards once, between them.

The learner's progress, ``update`` (its update, or its env steps with an env-step
:class:`~sokoban_tools.records.budget.StepSchedule`), reaches the environment through any wrapper or vector:
``reset(options={"update": n})``, or :meth:`SokobanFairnessEnv.set_update` (what
stable-baselines3's ``env_method("set_update", n)`` and Gymnasium's ``call`` reach), or the
``update`` argument; it takes effect at the next ``reset()``. The ``run`` label goes the same
ways (``reset(options={"run": r})``, :meth:`SokobanFairnessEnv.set_run`, the ``run``
argument): another pass of the same model (another sampling seed, a second look) is another
run at the same update, as ``evaluate --seed`` labels its passes.

With ``episode_log``, every finished episode is appended to it as an
:class:`sokoban_tools.records.episodes.EpisodeRecord`, labelled with that ``update`` (a
training row of a learner that never gives one is labelled with the sampler's draw), and
the run manifest is written beside it, the learner's own settings (``settings``, keys of
:data:`sokoban_tools.records.manifest.SETTINGS`) added to the environment's (``trained=False``
for a policy that never learnt on the training boards).

Validation passes: a pass starts at the first ``reset()``, at ``reset(seed=...)`` and at the
first ``reset()`` after a new ``update`` or ``run``; environment ``i`` of ``n`` logs its share of the
pass (boards ``i, i + n, ...``) and then, as a vector plays on, plays the pass's boards
again without logging them (``info["logged"]`` is false; such an episode may be cut by the
next pass's reset). The log, not the process, is the truth: a pass whose label (method, run,
update) the log already holds for any of this environment's boards is refused when it starts,
before anything is written, whichever process wrote them (a script run twice); a new label
given when this environment has logged some but not all of its share of the current pass is
refused too, since it would leave that pass partial. In training a ``reset()`` before an episode's end (a second
``model.learn()``) abandons the episode unlogged and counts it in :attr:`cut_episodes`.
"""

from __future__ import annotations

import json
from functools import lru_cache, partial
from pathlib import Path

import gymnasium
import numpy as np
from gymnasium import spaces

from ...checks import integer
from ...layout import TRAIN_DATA, VALIDATION_DATA
from ...protocol import DEFAULT_MAX_STEPS, DIM_ROOM
from ...records.boards import load_boards
from ...records.episodes import episode_writer
from ...records.manifest import BUDGET_UNIT, SETTING, UPDATES, environment_settings, new_manifest
from ...records.rows import BoardRow
from ...records.tuning_split import tuning_record, tuning_split
from ...runtime.env import ALL_ACTIONS, ACTION_CHOICES, FairSokobanEnv
from ...runtime.sampler import TrainingSampler
from ...records.budget import StepSchedule
from . import threads

ENV_ID = "SokobanFairness-v1"
SPLITS = {"train": TRAIN_DATA, "validation": VALIDATION_DATA}
IMAGE_SHAPE = (DIM_ROOM[0] * 16, DIM_ROOM[1] * 16, 3)
ACTIONS_NOTE = f"Discrete({len(ALL_ACTIONS)}): {ACTION_CHOICES} (0 spends a turn and moves nothing)"
OBSERVATIONS = {"rgb": "rgb_array", "grid": "one_hot_grid"}  # observation=: image_processing.observation
GRID_CLASSES = ("wall", "floor", "target", "box on target", "box", "player", "player on target")  # the state codes 0-6
GRID_SHAPE = (len(GRID_CLASSES), *DIM_ROOM)
_ONE_HOT = np.eye(len(GRID_CLASSES), dtype=np.uint8)


def one_hot_grid(state: np.ndarray) -> np.ndarray:
    """The ``state`` render's (H, W) cell codes as a one-hot (C, H, W) uint8 array."""
    return np.ascontiguousarray(_ONE_HOT[state].transpose(2, 0, 1))


@lru_cache(maxsize=8)
def _boards(split: str, dataset_dir: str | None, hub_revision: str | None,
            tuning: bool = False) -> tuple[tuple[BoardRow, ...], str]:
    """The checked rows of a split and the file's SHA-256, read once per process for every
    environment of a vector; with ``tuning``, the training pool's part for the split (see the
    module docstring) and the tuning boards' SHA-256."""
    if not tuning:
        rows, sha256 = load_boards(SPLITS[split], dataset_dir, hub_revision)
        return tuple(rows), sha256
    held = tuning_split(load_boards(TRAIN_DATA, dataset_dir, hub_revision)[0])
    return held.held_out if split == "validation" else held.rest, held.sha256


class SokobanFairnessEnv(gymnasium.Env):
    """The stored boards under verl-agent's rules as a Gymnasium environment; see the module docstring."""

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 4}

    def __init__(self, split: str = "train", render_mode: str | None = None, max_steps: int = DEFAULT_MAX_STEPS,
                 batch_size: int | None = None, shard_index: int = 0, shard_count: int = 1,
                 dataset_dir: str | Path | None = None, hub_revision: str | None = None,
                 episode_log: str | Path | None = None, method: str = "gymnasium", run: str = "0",
                 update: int | None = None, settings: dict | None = None, trained: bool = True,
                 observation: str = "rgb", rollout_n: int = 1, schedule: StepSchedule | None = None,
                 notes: dict | None = None, tuning: bool = False):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {', '.join(self.metadata['render_modes'])} or None, "
                             f"got {render_mode!r}")
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation must be one of {', '.join(OBSERVATIONS)}, got {observation!r}")
        if schedule is not None and not isinstance(schedule, StepSchedule):
            raise TypeError(f"schedule must be a StepSchedule, got {type(schedule).__name__}")
        self.split, self.render_mode, self.observation, self.schedule = split, render_mode, observation, schedule
        self.max_steps = integer("max_steps", max_steps, 1)
        self.shard_count = integer("shard_count", shard_count, 1)
        self.shard_index = integer("shard_index", shard_index, 0)
        if self.shard_index >= self.shard_count:
            raise ValueError(f"shard_index must be below shard_count {shard_count}, got {shard_index}")
        if not isinstance(tuning, bool):
            raise TypeError(f"tuning must be True (a tuning run) or False, got {tuning!r}")
        self.tuning = tuning
        self.rows, self.sha256 = _boards(split, None if dataset_dir is None else str(dataset_dir), hub_revision,
                                         tuning)
        problem = _shard_problem(split, len(self.rows), self.shard_count)
        if problem:
            raise ValueError(problem)
        self.rollout_n = integer("rollout_n", rollout_n, 1)
        self.batch_size = len(self.rows) if batch_size is None else integer("batch_size", batch_size, 1)
        if self.batch_size * self.rollout_n < self.shard_count:
            raise ValueError(f"a draw of batch_size={self.batch_size} boards x rollout_n={self.rollout_n} copies "
                             f"leaves environments of the {self.shard_count} shards without a board; draw at "
                             f"least {self.shard_count} episodes")
        self._update = 0 if update is None else integer("update", update, 0)
        self._progress_given = update is not None  # else training rows keep the sampler's draw
        self._pending: int | None = None  # an update given for the next reset
        self._pending_run: str | None = None  # a run label given for the next reset
        self.method, self.run = str(method), _run_label(run)
        self.learner_notes = notes
        self.observation_space = (spaces.Box(0, 255, IMAGE_SHAPE, np.uint8) if observation == "rgb"
                                  else spaces.Box(0, 1, GRID_SHAPE, np.uint8))
        self.action_space = spaces.Discrete(len(ALL_ACTIONS))
        self._game = FairSokobanEnv("rgb_array", self.max_steps)
        self._sampler: TrainingSampler | None = None
        self._queue: list[int] = []
        self._draw = 0
        self._next = self.shard_index  # the next validation board
        self._pass_boards: set[int] = set()  # the boards the current validation pass has started
        self._in_pass = False  # the current episode is one of this environment's share of a pass
        self._passes_begun = False
        self._position = 0  # the current episode's board, a position in rows
        self._row: BoardRow | None = None
        self._over = True
        self._turns = 0
        self.cut_episodes = 0  # training episodes abandoned unlogged by a reset before their end
        self.episode_log = None if episode_log is None else Path(episode_log)
        self._writer = None
        if self.episode_log is not None:
            manifest = self.manifest(settings or {}, trained)  # refused before the log is touched
            self._writer = episode_writer(self.episode_log)  # the log's lock, shared by a vector's environments
            self._writer.write_manifest(manifest, self.episode_log)  # written or checked by the first of them

    def manifest(self, settings: dict, trained: bool = True) -> dict:
        """The run manifest: the environment's settings, then the learner's ``settings``;
        ``trained``: the policy learnt on the training boards (false: a scripted policy)."""
        unknown = [key for key in settings if key not in SETTING]
        if unknown:
            raise ValueError(f"settings: unknown keys {unknown}; use keys of sokoban_tools.records.manifest.SETTINGS")
        own = self.played_settings()
        overridden = sorted(key for key in settings if key in own and settings[key] != own[key])
        if overridden:
            raise ValueError(f"settings: {overridden} are what this environment plays ({', '.join(f'{k}={own[k]!r}' for k in overridden)}), "
                             f"not the learner's to state; leave them out (max_steps= sets the horizon)")
        values = {key: None for key in SETTING}
        values[BUDGET_UNIT] = UPDATES  # the learner's labels, unless a schedule= or the learner says env steps
        values.update(own)
        values.update(settings)
        return new_manifest(self.method, values, self.manifest_notes(), trained=trained,
                            tuning=tuning_record(self.sha256) if self.tuning else None)

    def played_settings(self) -> dict:
        """The settings the environment itself plays (observation, history, horizon, rewards,
        and the schedule it was given)."""
        return {**environment_settings(), "image_processing.observation": OBSERVATIONS[self.observation],
                "image_processing.history_length": 0, "action_horizon": self.max_steps,
                **(self.schedule.settings() if self.schedule is not None else {})}

    def manifest_notes(self) -> dict:
        notes = {"trainer": "gymnasium", "env_id": ENV_ID, "actions": ACTIONS_NOTE}
        if self.observation == "grid":
            notes["observation"] = f"one-hot {GRID_SHAPE}: {', '.join(GRID_CLASSES)}"
        if self.schedule is not None:
            notes["schedule"] = self.schedule.note()
        if self.learner_notes:
            notes["learner"] = self.learner_notes
        return notes

    @property
    def update(self) -> int:
        """The learner's progress that labels the records (see the module docstring)."""
        return self._update if self._pending is None else self._pending

    @update.setter
    def update(self, value: int) -> None:
        self.set_update(value)

    def set_update(self, update: int) -> None:
        """Label the episodes from the next ``reset()`` on with ``update`` (the learner's update,
        or env steps under an env-step schedule); a method, so stable-baselines3's
        ``env_method("set_update", n)`` reaches it through wrappers and vectors."""
        self._pending = integer("update", update, 0)
        threads.warn_once()  # a learner is driving the environment: say what its torch threads cost

    def set_run(self, run: str) -> None:
        """Label the episodes from the next ``reset()`` on with the run ``run``, starting a new
        pass there: another pass of the same model at the same update (stable-baselines3:
        ``env_method("set_run", r)``)."""
        self._pending_run = _run_label(run)

    @property
    def board(self):
        """The current position (for wrappers that show it otherwise, as the GEM environment does)."""
        return self._game.board

    @property
    def row(self) -> BoardRow:
        """The stored board of the current episode (for tests and logs; not an observation)."""
        if self._row is None:
            raise RuntimeError("no episode yet: call reset()")
        return self._row

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        options = dict(options or {})
        if "update" in options:
            self.set_update(options.pop("update"))
        if "run" in options:
            self.set_run(options.pop("run"))
        if options:
            raise ValueError(f"reset options: unknown keys {sorted(options)}; the options are 'update' and 'run'")
        validation = self.split == "validation"
        relabelled = self._pending is not None or self._pending_run is not None  # a label given: a new pass
        unfinished = not self._over and self._row is not None
        if unfinished and not validation:
            if self._turns:
                self.cut_episodes += 1  # a training episode a learner abandoned: not finished, so not a record
        elif unfinished and self._writer is not None and self._in_pass and self._turns:
            raise RuntimeError(
                f"the episode on board {self._row.task_id} was cut at turn {self._turns} of its {self.max_steps}, "
                f"before it ended, so it cannot be logged to {self.episode_log}: a TimeLimit wrapper "
                f"(gymnasium.make(..., max_episode_steps={self._turns}) below the horizon) or a reset() before "
                f"the end; leave max_episode_steps out (the environment truncates at max_steps itself) or set "
                f"max_steps={self._turns}")
        elif unfinished and self._writer is not None and not self._in_pass and seed is None and not relabelled:
            raise RuntimeError(
                f"environment {self.shard_index} has played its boards of the validation pass at update "
                f"{self._update} and was playing on, as a vector does: this reset() starts another pass, "
                f"which would be logged under the same update and so dropped; label it first: "
                f"reset(options={{'update': n}}) or env_method('set_update', n) (stable-baselines3's set_attr "
                f"sets a wrapper's attribute, which the environment never sees)")
        if validation and unfinished and self._in_pass and not self._turns and seed is None and not relabelled:
            self._pass_boards.discard(self._position)  # reset again before a move: the same board, still to play
            self._next = self._position
        if validation and relabelled and self._writer is not None:
            self._refuse_partial_pass()
        if self._pending is not None:
            self._update, self._pending, self._progress_given = self._pending, None, True
        if self._pending_run is not None:
            self.run, self._pending_run = self._pending_run, None
        if validation and (relabelled or not self._passes_begun):
            self._begin_pass()
        super().reset(seed=seed)
        position = self._next_training_board(seed) if not validation else self._next_validation_board(seed)
        if validation:
            self._in_pass = position not in self._pass_boards  # a board again: the vector playing on
            self._pass_boards.add(position)
        self._position = position
        self._row = self.rows[position]
        self._game.start(self._row)
        self._turns, self._over = 0, False
        info = {"task_id": self._row.task_id, "board": position}
        if validation:
            info["logged"] = self._in_pass and self._writer is not None
        return self._observe(), info

    def _share(self) -> list[int]:
        """This shard's boards of a validation pass (positions in rows)."""
        return list(range(self.shard_index, len(self.rows), self.shard_count))

    def _begin_pass(self) -> None:
        """Start a validation pass under :attr:`run` and :attr:`update` from this shard's first board;
        one whose label the log already holds for any of this shard's boards is refused before
        anything is written (a lost label, or the same script run again, would otherwise log a
        second copy that only ``score`` would notice)."""
        if self._writer is not None:
            logged = _logged_boards(self.episode_log).get((self.method, self.run, self._update), set())
            again = [self.rows[i].task_id for i in self._share() if self.rows[i].task_id in logged]
            if again:
                raise RuntimeError(
                    f"{self.episode_log} already holds a validation pass of method {self.method!r}, run "
                    f"{self.run!r} at update {self._update} ({len(again)} of environment {self.shard_index}'s "
                    f"boards, {again[0]} first), written by this or an earlier process: nothing was written. For "
                    f"a pass of a model trained further, give its update first (reset(options={{'update': n}}) or "
                    f"env_method('set_update', n)); for another pass of the same model, another run "
                    f"(run= when the environment is made, reset(options={{'run': r}}) or env_method('set_run', r)); "
                    f"to start the run afresh, another episode_log (stable-baselines3's set_attr sets a "
                    f"wrapper's attribute, which the environment never sees)")
        self._passes_begun = True
        self._next, self._pass_boards = self.shard_index, set()

    def _refuse_partial_pass(self) -> None:
        """A new label while this shard has logged some but not all of its share of the current
        pass would leave that pass partial in the log: refuse it, before anything is written."""
        share = len(self._share())
        finished = len(self._pass_boards) - (1 if self._in_pass and not self._over else 0)
        if self._passes_begun and 0 < finished < share:
            self._pending = self._pending_run = None  # not taken: the next reset() continues the pass
            raise RuntimeError(
                f"environment {self.shard_index} has logged {finished} of its {share} boards of the validation pass "
                f"of run {self.run!r} at update {self._update} in {self.episode_log}; a new label now would leave "
                f"that pass partial, which score refuses: finish the pass first ({share - finished} more "
                f"episodes here; stable-baselines3's evaluate_policy with n_eval_episodes={len(self.rows)} over the "
                f"vector plays every environment's share), then label the next one; the label was not taken")

    def _observe(self) -> np.ndarray:
        if self.observation == "rgb":
            return self._game.render()
        return one_hot_grid(self._game.render("state"))

    def state_dict(self) -> dict:
        """What a checkpoint keeps to continue this environment exactly (its sampler, its place in
        the draws or the pass, and the moves of the episode under way, replayed on restore)."""
        return {"sampler": None if self._sampler is None else self._sampler.state_dict(), "queue": list(self._queue),
                "draw": self._draw, "next": self._next, "pass_boards": sorted(self._pass_boards),
                "run": self.run, "pending_run": self._pending_run, "passes_begun": self._passes_begun, "in_pass": self._in_pass, "update": self._update,
                "pending": self._pending, "progress_given": self._progress_given, "cut_episodes": self.cut_episodes,
                "row": None if self._row is None else self._position, "over": self._over,
                "moves": list(self._game.tally.played) if self._row is not None else [],
                "np_random": self.np_random.bit_generator.state}

    def load_state_dict(self, state: dict) -> np.ndarray | None:
        """Continue from :meth:`state_dict`; returns the observation of the episode under way."""
        ids = [row.task_id for row in self.rows]
        self._sampler = None if state["sampler"] is None else TrainingSampler.from_state_dict(ids, state["sampler"])
        self._queue, self._draw, self._next = list(state["queue"]), state["draw"], state["next"]
        self._pass_boards = set(state["pass_boards"])
        self.run, self._pending_run = state["run"], state["pending_run"]
        self._passes_begun, self._in_pass = state["passes_begun"], state["in_pass"]
        self._update, self._pending, self._progress_given = state["update"], state["pending"], state["progress_given"]
        self.cut_episodes, self._over = state["cut_episodes"], state["over"]
        self.np_random.bit_generator.state = state["np_random"]
        if state["row"] is None:
            return None
        self._position = state["row"]
        self._row = self.rows[self._position]
        self._game.start(self._row)
        self._turns = 0
        for action in state["moves"]:
            self._game.play(action)
            self._turns += 1
        return self._observe()

    def _next_training_board(self, seed: int | None) -> int:
        if seed is not None or self._sampler is None:
            if seed is None:
                base = int(self.np_random.integers(2 ** 62))
            elif seed < self.shard_index:
                raise ValueError(f"seed {seed} is below this environment's shard index {self.shard_index}: in a "
                                 f"vector reset with seed s, environment i gets s + i and samples with seed s")
            else:
                base = seed - self.shard_index
            ids = [row.task_id for row in self.rows]
            self._sampler, self._queue = TrainingSampler(ids, self.batch_size, self.rollout_n, base), []
        if not self._queue:
            batch = self._sampler.next_batch()
            self._draw = batch.update
            self._queue = [int(i) for i in batch.task_indices[self.shard_index::self.shard_count]]
        return self._queue.pop(0)

    def _next_validation_board(self, seed: int | None) -> int:
        if seed is not None:
            self._begin_pass()
        elif self._next >= len(self.rows):
            self._next = self.shard_index  # past its share: the pass's boards again, unlogged
        position = self._next
        self._next += self.shard_count
        return position

    def step(self, action):
        if self._over:
            raise RuntimeError("the episode is over (terminated or truncated): call reset()")
        if not self.action_space.contains(action):
            raise ValueError(f"action must be one of {ACTION_CHOICES}; got {action!r}")
        reward, _, info = self._game.play(int(action))
        self._turns += 1
        terminated = info["won"]
        truncated = not terminated and self._turns >= self.max_steps
        if terminated or truncated:
            self._over = True
            self._record()
        return (self._observe(), float(reward), terminated, truncated,
                {"task_id": self._row.task_id, "won": info["won"], "action_is_effective": info["action_is_effective"]})

    def _record(self) -> None:
        if self._writer is None:
            return
        validation = self.split == "validation"
        if validation:  # a vector plays on past its share of a pass: those episodes are not the pass's
            if not self._in_pass:
                return
        label = self._update if validation or self._progress_given else self._draw
        record = self._game.tally.record(self.method, self.run, "validation" if validation else "training",
                                         label, self._row.task_id, self.sha256 if validation else None)
        self._writer.append([record])  # as every writer records it: the tally's return, unrounded
        if validation and self._position + self.shard_count >= len(self.rows):
            self._writer.sync()  # its share of the pass is in: on disk before a checkpoint counts it

    def close(self):
        """Release the episode log (its lock goes with the last environment of the process using it)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        super().close()

    def render(self):
        if self.render_mode == "rgb_array":
            return self._game.render("rgb_array")
        if self.render_mode == "ansi":
            return "\n".join(self._game.render("list")) + "\n"
        return None


def _run_label(run) -> str:
    """A run label: a non-empty string on one line (an int, such as a seed, is taken as its digits)."""
    label = str(run) if isinstance(run, int) and not isinstance(run, bool) else run
    if not isinstance(label, str) or not label or "\n" in label:
        raise ValueError(f"run must be a non-empty one-line label (a seed, 'pass-2'), got {run!r}")
    return label


_LOGGED: dict[Path, tuple[tuple[int, int], dict]] = {}  # a log's validation boards, by its size and time


def _logged_boards(log: Path) -> dict[tuple[str, str, int], set[str]]:
    """The validation boards the log holds, by (method, run, update): read again whenever the
    log changed, once for all the environments of a vector (a torn last line is no record)."""
    try:
        stat = log.stat()
    except FileNotFoundError:
        return {}
    key = (stat.st_size, stat.st_mtime_ns)
    cached = _LOGGED.get(log)
    if cached is not None and cached[0] == key:
        return cached[1]
    boards: dict[tuple[str, str, int], set[str]] = {}
    with open(log, "rb") as handle:
        for line in handle:
            if b'"validation"' not in line or not line.endswith(b"\n"):
                continue
            try:
                row = json.loads(line)
            except ValueError:
                continue  # score names a malformed line; this check only looks for passes already there
            if isinstance(row, dict) and row.get("phase") == "validation":
                boards.setdefault((row.get("method"), row.get("run"), row.get("update")), set()).add(row.get("task_id"))
    _LOGGED[log] = (key, boards)
    return boards


def _shard_problem(split: str, boards: int, shard_count: int) -> str | None:
    """Why ``shard_count`` environments cannot share the ``boards`` of ``split``, or ``None``."""
    if split == "validation" and shard_count > boards:
        return (f"a vector of {shard_count} environments over the {boards} validation boards leaves environments "
                f"{boards}-{shard_count - 1} without a board: use at most {boards} (a divisor of {boards}, such as "
                f"{boards // 2}, gives every environment the same number of boards per pass)")
    return None


def make_vector(num_envs: int = 1, max_episode_steps: int | None = None, **kwargs) -> gymnasium.vector.SyncVectorEnv:
    """``gymnasium.make_vec``'s vector of ``num_envs``: environment ``i`` is shard ``i`` of
    ``num_envs`` (see the module docstring). A ``max_episode_steps`` below the horizon
    (``max_steps``) is refused before any environment is built; more environments than
    validation boards, by the first one's constructor, before it takes the log or writes."""
    num_envs = integer("num_envs", num_envs, 1)
    horizon = kwargs.get("max_steps", DEFAULT_MAX_STEPS)
    if max_episode_steps is not None and max_episode_steps < horizon:
        raise ValueError(f"max_episode_steps={max_episode_steps} would cut episodes before the horizon of "
                         f"{horizon} turns, and a cut episode is neither verl-agent's nor logged; leave it out (the "
                         f"environment truncates at max_steps itself) or set max_steps={max_episode_steps}")
    return gymnasium.vector.SyncVectorEnv(  # environment 0 refuses more shards than boards before any log is touched
        [partial(SokobanFairnessEnv, shard_index=i, shard_count=num_envs, **kwargs) for i in range(num_envs)])
