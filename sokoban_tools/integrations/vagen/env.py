"""VAGEN's Sokoban on the stored boards: :class:`FairSokoban`, a subclass of VAGEN's ``Sokoban``.

VAGEN generates a room per seed, and with ``min_solution_steps`` set it retries
with ``abs(hash(str(seed)))``, which Python salts per process, so its boards
change from run to run. :class:`FairSokoban` keeps everything of VAGEN's
``Sokoban`` (reply parsing, prompts, actions per turn, rewards, the image, the
text grid) and changes only where a board comes from: ``reset(seed)`` installs a
stored board into VAGEN's gym-sokoban room instead of generating one.

* ``fairness_split: validation`` (the default): seed ``i`` (0-255) plays the
  ``i``-th board of ``fairness/evaluation.jsonl`` in stored order; any other seed
  is refused, since it names no validation board.
* ``fairness_split: train``: seed ``s`` (any integer >= 0) plays the board at
  position ``s mod 5000`` of ``fairness/train.jsonl``, so seeds 0-4999 are each
  training board once and a VAGEN seed range wraps around the pool.

Where the files come from: ``fairness_boards`` (a local copy of the dataset
repository) or ``fairness_revision`` (a Hub revision), else as
:func:`sokoban_tools.records.boards.load_boards` decides; either way checked
against the published digests. These three keys are taken out of the env config
before VAGEN's ``SokobanEnvConfig`` sees the rest, which must keep the boards'
shape (``dim_room: [6, 6]``, ``num_boxes: 1``).

The reset's ``info`` names the board (``task_id``, its position, the split and the
file's SHA-256) and every step's ``info`` adds ``actions_taken``, how many moves VAGEN
executed that turn, and ``moves``, those moves in the episode log's letters; VAGEN's evaluator dumps both into each rollout's
``metrics.json``, from which :mod:`.episodes` writes the episode log.

Importing this module needs VAGEN (``vagen``) and its Sokoban's packages.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict

import numpy as np

from vagen.envs.sokoban.patch_sokoban_env import PatchedSokobanEnv
from vagen.envs.sokoban.sokoban_env import Sokoban

from ...checks import integer
from ...layout import TRAIN_DATA, VALIDATION_DATA
from ...protocol import DIM_ROOM, NUM_BOXES
from ...records.boards import load_boards
from ...records.episodes import moves_of
from ...records.rows import BoardRow

SPLITS = {"validation": VALIDATION_DATA, "train": TRAIN_DATA}
FAIRNESS_KEYS = ("fairness_split", "fairness_boards", "fairness_revision")


@lru_cache(maxsize=4)
def _boards(split: str, dataset_dir: str | None, revision: str | None) -> tuple[tuple[BoardRow, ...], str]:
    """The checked rows of a split and the file's SHA-256, read once per process: VAGEN
    builds a new environment for every episode."""
    rows, sha256 = load_boards(SPLITS[split], dataset_dir, revision)
    return tuple(rows), sha256


def board_for_seed(split: str, seed, rows) -> int:
    """The position of the board that ``seed`` plays (see the module docstring)."""
    seed = integer("seed (naming a stored board)", seed, 0)
    if split == "validation":
        if seed >= len(rows):
            raise ValueError(f"seed {seed} names no validation board: seeds 0-{len(rows) - 1} are the "
                             f"{len(rows)} boards of {VALIDATION_DATA} in stored order (use the shipped "
                             f"seed_list, sokoban_tools/integrations/vagen/eval_validation.yaml)")
        return int(seed)
    return int(seed) % len(rows)


class _StoredRoom(PatchedSokobanEnv):
    """VAGEN's gym-sokoban room, whose ``reset`` installs the stored board ``row`` instead of
    generating one from the seed (VAGEN's generation filters, passed along, have nothing to do)."""

    row: BoardRow | None = None

    def reset(self, *args, render_mode="rgb_array", **kwargs):
        if self.row is None:
            raise RuntimeError("no stored board chosen: FairSokoban.reset(seed) chooses it")
        board = self.row.board
        self.room_fixed = np.array(board.room_fixed, dtype=int)
        self.room_state = np.array(board.room_state(), dtype=int)
        self.box_mapping = {board.target: board.box}
        self.player_position = np.array(board.player)
        self.num_env_steps = 0
        self.reward_last = 0
        self.boxes_on_target = 0  # stored boards are never solved
        return self.render(render_mode)


class FairSokoban(Sokoban):
    """VAGEN's ``Sokoban`` whose ``reset(seed)`` plays a stored board; see the module docstring."""

    def __init__(self, env_config: Dict[str, Any]):
        config = dict(env_config)
        split = config.pop("fairness_split", "validation")
        dataset_dir = config.pop("fairness_boards", None)
        revision = config.pop("fairness_revision", None)
        if split not in SPLITS:
            raise ValueError(f"fairness_split must be one of {', '.join(SPLITS)}, got {split!r}")
        for key, expected in (("dim_room", DIM_ROOM), ("num_boxes", NUM_BOXES)):
            value = config.get(key, expected)
            if (tuple(value) if isinstance(value, (list, tuple)) else value) != expected:
                raise ValueError(f"{key} must be {list(expected) if key == 'dim_room' else expected} for the "
                                 f"stored boards (6x6, one box), got {value!r}")
        super().__init__(config)
        self.split = split
        self.rows, self.sha256 = _boards(split, dataset_dir, revision)
        # VAGEN's room, minus generation: its steps, rewards and image stay gym-sokoban's.
        self.env = _StoredRoom(dim_room=self.config.dim_room, max_steps=self.config.max_steps,
                               num_boxes=self.config.num_boxes, reset=False)

    @property
    def row(self) -> BoardRow | None:
        """The stored board of the current episode."""
        return self.env.row

    async def reset(self, seed: int):
        position = board_for_seed(self.split, seed, self.rows)
        self.env.row = self.rows[position]
        obs, info = await super().reset(seed)  # VAGEN's reset, on the stored room
        info.update(task_id=self.row.task_id, board=position, split=self.split, file_sha256=self.sha256)
        return obs, info

    async def step(self, action_str: str):
        obs, reward, done, info = await super().step(action_str)
        info["actions_taken"] = len(self.valid_actions)
        info["moves"] = moves_of(self.ACTION_LOOKUP[action] for action in self.valid_actions)
        return obs, reward, done, info
