"""A worked example on real episodes: two simple policies, several runs, a few updates.

    python -m sokoban_tools example            # write examples/episodes/*.jsonl
    python -m sokoban_tools example --check    # replay; fail if a committed log differs

Both policies play every validation board through the runtime environment
(:class:`sokoban_tools.runtime.env.FairSokobanEnv`, 15 actions), seeing only the
observation, and every episode is logged in the episode-log schema, so the
logs can be scored and compared like a real trainer's:

- ``random``: each action uniformly among 1-4;
- ``path-follower``: with probability ``p = update / (update + 10)`` (0 before
  training, rising with updates) the first action of a shortest solution from
  the position it sees (the observation of verl-agent's ``state`` mode, the
  board's codes with a player on a target shown as 6), otherwise a random action
  (also when random moves have made the board unsolvable).

Each (method, run, update) draws from its own seeded generator, so the logs
are the same in every process. Each log has its run manifest beside it
(:mod:`sokoban_tools.records.manifest`): the settings a scripted policy has
(horizon, rewards, the observation it sees, the validation schedule; null for
weights, prompts and decoding, which it has none of), and as costs the
environment steps both spend and the shortest-path searches the path follower
adds, its extra scoring.
"""

from __future__ import annotations

import sys
from itertools import repeat
from pathlib import Path

import numpy as np

from sokoban_published import PUBLISHED_FILES

from ..records.manifest import (BUDGET_UNIT, SETTING, UPDATES as IN_UPDATES, environment_settings, manifest_path,
                                merge_costs, new_manifest)
from ..evaluation.scoring import DEFAULT_VALIDATION
from ..layout import EXAMPLE_EPISODES, VALIDATION_DATA
from ..records.rows import BoardRow
from ..rules.board import ACTIONS, BOX, BOX_ON_TARGET, FLOOR, PLAYER, TARGET, WALL, Board
from ..rules.solver import shortest_solution
from ..protocol import DEFAULT_MAX_STEPS
from ..runtime.env import PLAYER_ON_TARGET, FairSokobanEnv
from ..records.episodes import EpisodeRecord
from ..records.tasks import load_validation
from .artifacts import command_line, json_document, run_command, worker_processes

COMMAND = "python -m sokoban_tools example"
OUT_DIR = EXAMPLE_EPISODES
METHODS = ("random", "path-follower")
RUNS = 3
UPDATES = (0, 5, 10, 15)


def follow_probability(method: str, update: int) -> float:
    """How often the method follows a shortest path at ``update``."""
    return 0.0 if method == "random" else update / (update + 10)


# Each code of a ``state`` observation as the (room_fixed, room_state) codes it stands for.
SEEN_CODES = {WALL: (WALL, WALL), FLOOR: (FLOOR, FLOOR), TARGET: (TARGET, TARGET), BOX: (FLOOR, BOX),
              BOX_ON_TARGET: (TARGET, BOX_ON_TARGET), PLAYER: (FLOOR, PLAYER), PLAYER_ON_TARGET: (TARGET, PLAYER)}


def board_seen(state: np.ndarray) -> Board:
    """The position a ``state`` observation shows."""
    rows = [[SEEN_CODES[code] for code in row] for row in np.asarray(state).tolist()]
    return Board.from_rooms([[fixed for fixed, _ in row] for row in rows], [[code for _, code in row] for row in rows])


def choose(observation: np.ndarray, follow: float, rng: np.random.Generator) -> tuple[int, bool]:
    """One action and whether a shortest path was searched for it: the path's next
    move with probability ``follow``, else (or when random moves have made the board
    unsolvable) a random one."""
    if rng.random() < follow:
        path = shortest_solution(board_seen(observation))
        return (path[0], True) if path else (ACTIONS[int(rng.integers(len(ACTIONS)))], True)
    return ACTIONS[int(rng.integers(len(ACTIONS)))], False


def play_pass(method: str, run: int, update: int, boards: list[BoardRow], digest: str
              ) -> tuple[list[EpisodeRecord], int]:
    """One validation pass of a method's run at an update: every board once, in
    stored order; its records and the shortest-path searches it made."""
    rng = np.random.Generator(np.random.PCG64([METHODS.index(method), run, update]))
    follow = follow_probability(method, update)
    env = FairSokobanEnv(mode="state")
    records, searches = [], 0
    for row in boards:
        observation, _ = env.reset(row)
        done = False
        while not done:
            action, searched = choose(observation, follow, rng)
            searches += searched
            observation, _, done, _ = env.step(action)
        records.append(env.tally.record(method, f"seed-{run}", "validation", update, row.task_id, digest))
    return records, searches


def log_path(out_dir: Path, method: str) -> Path:
    return out_dir / f"{method}.jsonl"


SCRIPTED_NOTES = (
    "A scripted policy of the worked example: it has no weights, prompt or decoding (null), sees the "
    "state observation and plays the environment's horizon and rewards; costs count environment steps "
    "and the path follower's shortest-path searches.")


def example_manifest(method: str, updates: tuple[int, ...], steps: int, searches: int,
                     notes: str = SCRIPTED_NOTES) -> dict:
    """The run manifest of a method's log: what a scripted policy has of the controlled
    settings, and its costs."""
    gaps = {later - earlier for earlier, later in zip(updates, updates[1:])}
    settings = {key: None for key in SETTING}  # no weights, prompt, decoding or training
    settings.update(environment_settings())
    settings.update({"image_processing.observation": "state", "image_processing.history_length": 0,
                     "action_horizon": DEFAULT_MAX_STEPS, "reward.invalid_action_penalty": False,
                     "update_budget.total_training_steps": max(updates), BUDGET_UNIT: IN_UPDATES,
                     "evaluation.before_training": 0 in updates,
                     "evaluation.frequency": gaps.pop() if len(gaps) == 1 else None})
    manifest = new_manifest(method, settings, notes=notes, trained=False)
    entries = {"environment_steps": ("environment steps", steps)}
    if searches:
        entries["shortest_path_searches"] = ("solver calls", searches)
    return merge_costs(manifest, entries, f"the manifest of {method}")


def build(out_dir: Path = OUT_DIR, runs: int = RUNS, updates: tuple[int, ...] = UPDATES,
          validation: Path = DEFAULT_VALIDATION, workers: int = 1) -> dict[Path, bytes]:
    """One log per method holding all its runs and updates, and its manifest. The
    passes are independent (each seeds its own generator), so ``workers`` processes
    share them and the files do not depend on how many there are."""
    boards = load_validation(validation)  # refused unless it is the published file, whose digest this is
    digest = PUBLISHED_FILES[VALIDATION_DATA]["sha256"]
    updates = tuple(sorted(set(updates)))
    passes = [(method, run, update) for method in METHODS for update in updates for run in range(runs)]
    with worker_processes(workers) as executor:
        play = executor.map if executor is not None else map
        played = list(play(play_pass, *zip(*passes), repeat(boards), repeat(digest)))
    lines: dict[str, list[str]] = {method: [] for method in METHODS}
    searches = dict.fromkeys(METHODS, 0)
    steps = dict.fromkeys(METHODS, 0)
    for (method, _, _), (records, searched) in zip(passes, played):
        lines[method].extend(record.to_line() + "\n" for record in records)
        searches[method] += searched
        steps[method] += sum(record.actions for record in records)
    files = {}
    for method in METHODS:
        log = log_path(out_dir, method)
        files[log] = "".join(lines[method]).encode("utf-8")
        files[manifest_path(log)] = json_document(example_manifest(method, updates, steps[method], searches[method]))
    return files


def main(argv: list[str] | None = None) -> int:
    parser = command_line(COMMAND, description=__doc__.split("\n\n")[0], workers=True)
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="folder of the logs (default: examples/episodes)")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs per method (default {RUNS})")
    parser.add_argument("--updates", type=int, nargs="+", default=list(UPDATES),
                        help=f"updates at which to validate (default {' '.join(map(str, UPDATES))})")
    args = parser.parse_args(argv)
    if args.runs < 1 or any(u < 0 for u in args.updates):
        parser.error("--runs must be at least 1 and --updates non-negative")
    outputs = [path for method in METHODS for path in (log_path(args.out, method),
                                                          manifest_path(log_path(args.out, method)))]
    return run_command(COMMAND, args.check, outputs, lambda: build(args.out, args.runs, tuple(args.updates),
                                                                      workers=args.workers))


if __name__ == "__main__":
    sys.exit(main())
