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
are the same in every process.
"""

from __future__ import annotations

import sys
from itertools import repeat
from pathlib import Path

import numpy as np

from sokoban_published import PUBLISHED_FILES

from ..evaluation.scoring import DEFAULT_VALIDATION
from ..layout import EXAMPLE_EPISODES, VALIDATION_DATA
from ..rows import BoardRow
from ..rules.board import ACTIONS, BOX, BOX_ON_TARGET, FLOOR, PLAYER, TARGET, WALL, Board
from ..rules.solver import shortest_solution
from ..runtime.env import PLAYER_ON_TARGET, FairSokobanEnv
from ..runtime.episodes import EpisodeRecord
from ..runtime.tasks import load_validation
from .artifacts import command_line, run_command, worker_processes

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


def choose(observation: np.ndarray, follow: float, rng: np.random.Generator) -> int:
    """One action: the shortest path's next move with probability ``follow``, else
    (or when random moves have made the board unsolvable) a random one."""
    if rng.random() < follow:
        path = shortest_solution(board_seen(observation))
        if path:
            return path[0]
    return ACTIONS[int(rng.integers(len(ACTIONS)))]


def play_pass(method: str, run: int, update: int, boards: list[BoardRow], digest: str) -> list[EpisodeRecord]:
    """One validation pass of a method's run at an update: every board once, in stored order."""
    rng = np.random.Generator(np.random.PCG64([METHODS.index(method), run, update]))
    follow = follow_probability(method, update)
    env = FairSokobanEnv(mode="state")
    records = []
    for row in boards:
        observation, _ = env.reset(row)
        total, done, info = 0.0, False, {"won": False}
        while not done:
            observation, reward, done, info = env.step(choose(observation, follow, rng))
            total += reward
        records.append(EpisodeRecord(method, f"seed-{run}", "validation", update, row.task_id,
                                     info["won"], env.num_env_steps, total, digest))
    return records


def log_path(out_dir: Path, method: str) -> Path:
    return out_dir / f"{method}.jsonl"


def build(out_dir: Path = OUT_DIR, runs: int = RUNS, updates: tuple[int, ...] = UPDATES,
          validation: Path = DEFAULT_VALIDATION, workers: int = 1) -> dict[Path, bytes]:
    """One log per method holding all its runs and updates. The passes are
    independent (each seeds its own generator), so ``workers`` processes share them
    and the logs do not depend on how many there are."""
    boards = load_validation(validation)  # refused unless it is the published file, whose digest this is
    digest = PUBLISHED_FILES[VALIDATION_DATA]["sha256"]
    passes = [(method, run, update) for method in METHODS for update in updates for run in range(runs)]
    with worker_processes(workers) as executor:
        play = executor.map if executor is not None else map
        played = list(play(play_pass, *zip(*passes), repeat(boards), repeat(digest)))
    lines: dict[str, list[str]] = {method: [] for method in METHODS}
    for (method, _, _), records in zip(passes, played):
        lines[method].extend(record.to_line() + "\n" for record in records)
    return {log_path(out_dir, method): "".join(lines[method]).encode("utf-8") for method in METHODS}


def main(argv: list[str] | None = None) -> int:
    parser = command_line(COMMAND, description=__doc__.split("\n\n")[0], workers=True)
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="folder of the logs (default: examples/episodes)")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs per method (default {RUNS})")
    parser.add_argument("--updates", type=int, nargs="+", default=list(UPDATES),
                        help=f"updates at which to validate (default {' '.join(map(str, UPDATES))})")
    args = parser.parse_args(argv)
    if args.runs < 1 or any(u < 0 for u in args.updates):
        parser.error("--runs must be at least 1 and --updates non-negative")
    outputs = [log_path(args.out, method) for method in METHODS]
    return run_command(COMMAND, args.check, outputs, lambda: build(args.out, args.runs, tuple(args.updates),
                                                                      workers=args.workers))


if __name__ == "__main__":
    sys.exit(main())
