"""The original verl-agent generator and solver, on their own numpy grids: a
yardstick for ``python -m sokoban_tools benchmark``, never used to make data.

verl-agent's ``generate_room`` is gym-sokoban's: a topology walk, player and
box placement and a reverse move, which gym-sokoban 0.0.6 (installed by the
test extra) ships and this module calls; verl-agent drives them with its own
depth-limited search over pull moves only, then walks the player a few random
steps, and solves with a breadth-first search over whole grids. This module
drives gym-sokoban's functions that way, with the original's data
representation (numpy grids, explored sets of ``marshal`` bytes, grids copied
per move), so that timing it measures the original algorithm. The benchmark
checks that it returns the boards :mod:`sokoban_tools.pipeline.generate.generator` returns.

It seeds and so changes Python's and numpy's global RNGs, as the original does.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import io
import marshal
import random
import warnings
from collections import deque

import numpy as np

from ...rules.board import ACTIONS, BOX, BOX_ON_TARGET, DELTAS, FLOOR, PLAYER, TARGET, WALL, Board
from ..generate.generator import MAX_EXPLORED_STATES, GeneratorConfig

# While generating, gym-sokoban marks a box that was pulled BOX_ON_TARGET (3),
# whatever it stands on, and an unpulled one BOX (4).
PULLED = BOX_ON_TARGET


def gym_sokoban(module: str):
    """The gym-sokoban module of that full name, or an error that says how to install it.

    gym 0.26, which gym-sokoban 0.0.6 needs (as verl-agent pins them), prints a
    notice on every import that it is unmaintained: true of the yardstick, not
    news about the figures, so it is kept out of the benchmark's output."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(module)
    except ImportError as err:
        raise RuntimeError("the original needs gym-sokoban 0.0.6: pip install -e '.[test]'") from err


def room_utils():
    """gym-sokoban's generator module."""
    return gym_sokoban("gym_sokoban.envs.room_utils")


def rooms_of(board: Board) -> tuple[np.ndarray, np.ndarray]:
    """``room_fixed`` and ``room_state`` as the original environment holds them."""
    return np.array(board.room_fixed), np.array(board.room_state())


def generate(seed: int, config: GeneratorConfig = GeneratorConfig()) -> tuple[np.ndarray, np.ndarray] | None:
    """``(room_fixed, room_state)`` as verl-agent makes them for ``seed``, or
    ``None`` where it raises."""
    utils = room_utils()
    random.seed(seed)
    np.random.seed(seed)
    for _ in range(config.tries):
        room = utils.room_topology_generation(config.dim_room, config.p_change_directions, config.num_steps)
        try:
            room = utils.place_boxes_and_player(room, num_boxes=config.num_boxes, second_player=False)
        except RuntimeError:
            return None
        fixed = room.copy()
        fixed[fixed == PLAYER] = FLOOR
        state = room.copy()
        state[state == TARGET] = BOX
        state, mapping = _reverse_search(utils, state, fixed, config.search_depth)
        score = utils.box_displacement_score(mapping)
        if score > 0:
            break
    else:
        return None
    state[state == PULLED] = BOX
    chance = config.move_probability_one_cell if score == 1 else config.move_probability
    return fixed, _random_walk(state, fixed, chance, config)


def _reverse_search(utils, state: np.ndarray, fixed: np.ndarray, depth: int) -> tuple[np.ndarray, dict]:
    """Depth-first reverse play over pull moves; the first highest-scoring grid and its box mapping."""
    targets = np.argwhere(fixed == TARGET)
    explored: set[bytes] = set()
    best = {"score": -1, "state": state, "mapping": {tuple(t): tuple(t) for t in targets}}

    def visit(state, mapping, swaps, last_pull, ttl):
        ttl -= 1
        if ttl <= 0 or len(explored) >= MAX_EXPLORED_STATES:
            return
        key = marshal.dumps(state)
        if key in explored:
            return
        score = swaps * utils.box_displacement_score(mapping)
        if np.where(state == TARGET)[0].shape[0] != len(targets):
            score = 0
        if score > best["score"]:
            best.update(score=score, state=state.copy(), mapping=mapping.copy())
        explored.add(key)
        for action in range(4):  # gym-sokoban's pull actions: up, down, left, right
            after, after_mapping, pulled = utils.reverse_move(state.copy(), fixed, mapping.copy(), last_pull, action)
            visit(after, after_mapping, swaps + (pulled != last_pull), pulled, ttl)

    visit(state, dict(best["mapping"]), 0, (-1, -1), depth)
    return best["state"], best["mapping"]


def _random_walk(state: np.ndarray, fixed: np.ndarray, chance: float, config: GeneratorConfig) -> np.ndarray:
    """The final player walk: onto free floor or target, never back onto a visited cell."""
    if random.random() > chance:
        return state
    player = tuple(np.argwhere(state == PLAYER)[0])
    visited = [player]
    for steps in range(1, config.max_walk_steps + 1):
        options = []
        for action in ACTIONS:
            ahead = (player[0] + DELTAS[action][0], player[1] + DELTAS[action][1])
            if state[ahead] in (FLOOR, TARGET) and ahead not in visited:
                options.append(ahead)
        if not options:
            break
        ahead = random.choice(options)
        state[player], state[ahead] = fixed[player], PLAYER
        player = ahead
        visited.append(player)
        if steps >= config.max_walk_steps or random.random() > config.continue_probability:
            break
    return state


def shortest_solution(room_fixed: np.ndarray, room_state: np.ndarray) -> list[int]:
    """verl-agent's breadth-first solver: whole grids in the queue, deduplicated
    as they are taken out; ``[]`` when there is no solution."""
    queue = deque([(copy.deepcopy(room_state), [])])
    explored: set[bytes] = set()
    height, width = room_fixed.shape
    while queue:
        state, path = queue.popleft()
        key = marshal.dumps(state)
        if key in explored:
            continue
        explored.add(key)
        player = tuple(np.argwhere(state == PLAYER)[0])
        boxes = set(map(tuple, np.argwhere((state == BOX_ON_TARGET) | (state == BOX))))
        if not set(map(tuple, np.argwhere(state == BOX))):
            return path
        for action in ACTIONS:
            dr, dc = DELTAS[action]
            ahead = (player[0] + dr, player[1] + dc)
            if not (0 <= ahead[0] < height and 0 <= ahead[1] < width) or room_fixed[ahead] == WALL:
                continue
            after = copy.deepcopy(state)
            if ahead in boxes:
                beyond = (ahead[0] + dr, ahead[1] + dc)
                if not (0 <= beyond[0] < height and 0 <= beyond[1] < width) or room_fixed[beyond] == WALL \
                        or beyond in boxes:
                    continue
                after[ahead] = room_fixed[ahead]
                after[beyond] = BOX_ON_TARGET if room_fixed[beyond] == TARGET else BOX
            after[player] = room_fixed[player]
            after[ahead] = PLAYER
            queue.append((after, path + [action]))
    return []
