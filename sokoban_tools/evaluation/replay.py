"""Replay logged episodes on their stored boards, so a claimed win is checked, not believed.

Every record holds its ``moves`` (:mod:`sokoban_tools.records.episodes`). :func:`replay`
plays them from the stored board by the game's own rules (the move rule, the reward and the
episode's end of :mod:`sokoban_tools.rules`, verl-agent's), never through the runtime that
wrote them, with the run's action horizon, and :func:`check_record` compares what the replay gives with
what the record claims: the outcome, the count of actions 1-4 and the return. A replay
also refuses moves that go on after the episode was over (the box on its target, or the
horizon's last counted step) and more turns than the horizon, and a lost episode that did not
end: the project's writers log an episode when it ends, at its target or after the horizon's
turns (a turn whose answer was no move, ``0``, counts no step, so a writer stops at the turn
limit with fewer counted actions: its moves still hold one character a turn), so moves that
stop before both were cut short, and a lost record of a few moves would lift a mean return.

The return and the end are checked only for a run whose manifest declares the runtime's own
rewards (:func:`sokoban_tools.records.manifest.environment_settings`); another stack's scheme,
such as VAGEN's per-turn format reward and turn limit of several actions a turn (its turns
without a move leave nothing in the moves), cannot be recomputed from the moves alone, so
its records are checked on outcome and actions (:func:`rewards_replayable`).

Records of an older writer have no moves: they are counted as unverified, never
taken as verified.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

from ..protocol import DEFAULT_MAX_STEPS, STEP_PENALTY
from ..records.episodes import EpisodeRecord, actions_of, read_episodes
from ..records.manifest import environment_settings
from ..records.run import OpenRun
from ..records.rows import DataError
from ..records.tasks import load_training, load_validation
from ..rules.board import Board
from ..rules.reward import episode_over, step_reward
from .scoring import LoggedRow

NO_ANSWER = 0  # a turn whose answer was no move: the step penalty, nothing moves, no step counted
RETURN_TOLERANCE = 1e-6  # a writer may round the return (Gymnasium keeps 10 decimals)


@dataclass(frozen=True)
class Replay:
    """What playing a record's moves gives: outcome, actions 1-4, return; ``problem`` when the
    moves cannot be an episode of this horizon (moves after the end, too many turns);
    ``ended``: the moves reach an end (the target, or the horizon's last turn)."""

    won: bool
    actions: int
    episode_return: float
    problem: str | None = None
    ended: bool = True


@lru_cache(maxsize=1 << 18)  # the same moves on the same board replay alike: reports check each pass many times
def replay(board: Board, moves: str, horizon: int = DEFAULT_MAX_STEPS) -> Replay:
    """Play ``moves`` from ``board`` under the game's rules (:mod:`sokoban_tools.rules`) with
    ``horizon`` counted steps. It keeps its own count on purpose, using neither the runtime
    environment nor the writers' tally: a check that ran the writer's code would share its bugs."""
    problem = None
    if len(moves) > horizon:
        problem = f"{len(moves)} turns, more than the action horizon of {horizon}"
    position, counted, total, over = board, 0, 0.0, False
    for turn, action in enumerate(actions_of(moves), start=1):
        if over:
            problem = f"move {turn} of {len(moves)} comes after the episode was over"
            break
        if action == NO_ANSWER:
            total += STEP_PENALTY
            continue
        after, _ = position.move(action)
        counted += 1
        total += step_reward(position, after)
        position, over = after, episode_over(after, counted, horizon)
    return Replay(over and position.is_solved, counted, total, problem, over or len(moves) >= horizon)


def rewards_replayable(manifest: dict | None) -> bool:
    """Whether a run's returns are the runtime's rewards: its manifest (``None``: no manifest,
    taken as the runtime's) declares every reward setting the environment defines."""
    if manifest is None:
        return True
    settings = manifest["settings"]
    return all(settings.get(key) is not None and math.isclose(settings[key], value)
               for key, value in environment_settings().items())


def check_record(record: EpisodeRecord, board: Board, horizon: int = DEFAULT_MAX_STEPS,
                 check_return: bool = True) -> str | None:
    """What the replay of ``record``'s moves contradicts in the record (``None``: nothing);
    the record must hold moves (:attr:`EpisodeRecord.verifiable`). ``check_return``: the run
    plays the runtime's rules, whose return and end (see the module docstring) are checked."""
    played = replay(board, record.moves, horizon)
    wrong_return = check_return and abs(played.episode_return - record.episode_return) > RETURN_TOLERANCE
    if played.problem or played.won != record.won or played.actions != record.actions or wrong_return:
        claimed = _outcome(record.won, record.actions, record.episode_return, check_return)
        found = _outcome(played.won, played.actions, played.episode_return, check_return)
        why = f" ({played.problem})" if played.problem else ""
        return (f"the record says {claimed}, but replaying its moves {record.moves!r} on board "
                f"{record.task_id} gives {found}{why}")
    if check_return and not played.ended:
        return (f"the record is of an episode that did not end: its moves {record.moves!r} on board "
                f"{record.task_id} stop after {len(record.moves)} of the {horizon} turns of the horizon with the "
                f"box off its target, and an episode is logged when it ends")
    return None


def _outcome(won: bool, actions: int, episode_return: float, with_return: bool) -> str:
    text = f"won={str(won).lower()}, actions={actions}"
    return f"{text}, return={episode_return:.10g}" if with_return else text


@dataclass(frozen=True)
class Verification:
    """What a replay of some logs found: records replayed and agreeing, records without moves
    (unverified), and the logs whose returns were not replayed (another reward scheme)."""

    verified: int
    unverified: int
    returns_unchecked: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"verified": self.verified, "unverified": self.unverified,
                "returns_unchecked": list(self.returns_unchecked)}

    @classmethod
    def of(cls, found: dict) -> "Verification":
        """The verification of an :meth:`as_dict` (a report's)."""
        return cls(found["verified"], found["unverified"], tuple(found["returns_unchecked"]))

    def describe(self) -> str:
        """One line for a report."""
        text = f"Replayed {self.verified:,} episodes from their moves: every one agrees with its record"
        if self.unverified:
            text += (f"; {self.unverified:,} records hold no moves (an older writer) and are UNVERIFIED "
                     f"(log again with this version to verify them)")
        if self.returns_unchecked:
            text += (f"; returns not replayed for {', '.join(self.returns_unchecked)} (its manifest declares "
                     f"other rewards than the runtime's)")
        return text + "."


def log_rules(run: OpenRun) -> tuple[int, bool]:
    """The action horizon a log's episodes were played with, and whether their returns are the
    runtime's rewards, from the manifest of its ``run`` (without one: the runtime's defaults)."""
    manifest = run.manifest()
    if manifest is None:
        return DEFAULT_MAX_STEPS, True
    return manifest["settings"]["action_horizon"] or DEFAULT_MAX_STEPS, rewards_replayable(manifest)


def verify_rows(rows: Iterable, boards: Mapping[str, Board]) -> Verification:
    """Replay every record of ``rows`` (objects with ``location``, ``file:line``, ``opened``, its
    run, and ``record``) that holds moves, each under the rules of its log's manifest (:func:`log_rules`); a
    :class:`DataError` naming the first record the replay contradicts."""
    rules: dict[str, tuple[int, bool]] = {}
    verified = unverified = 0
    for row in rows:
        record = row.record
        if not record.verifiable:
            unverified += 1
            continue
        log = row.log
        if log not in rules:
            rules[log] = log_rules(row.opened)
        horizon, check_return = rules[log]
        if record.task_id not in boards:
            raise DataError(f"{row.location}: board {record.task_id!r} is not a stored board, so its moves "
                            f"cannot be replayed")
        problem = check_record(record, boards[record.task_id], horizon, check_return)
        if problem:
            raise DataError(f"{row.location}: {problem}; the log does not record what was played (edited, "
                            f"or written by a faulty writer): write it again with the runtime")
        verified += 1
    unchecked = tuple(log for log, (_, check_return) in rules.items() if not check_return)
    return Verification(verified, unverified, unchecked)


def verify_log(log: Path | str, validation: Path | str | None = None, train: Path | str | None = None
               ) -> Verification:
    """Replay every record of one log, training rows included (the clone's board files by
    default); see :func:`verify_rows`."""
    records = read_episodes(log)
    boards = {row.task_id: row.board for row in load_validation(*([validation] if validation else []))}
    if any(record.phase == "training" for record in records):
        boards.update((row.task_id, row.board) for row in load_training(*([train] if train else [])))
    run = OpenRun(log)
    return verify_rows([LoggedRow(run, line, record) for line, record in enumerate(records, start=1)], boards)
