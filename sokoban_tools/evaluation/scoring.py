"""Validation episode logs as per-board outcomes, refused unless complete and current.

A score is only comparable with another if both come from complete passes
over the same published boards. So the rows of the logs (the schema of
:mod:`sokoban_tools.records.episodes`) are grouped by (method, run, update), and a log
is refused, naming its file and line, when a validation row played another
evaluation file than the published one, when logs played different board
sets, or when a group repeats a board, names an unknown one or misses one
(but for ``score``, the last pass of a run still validating, or stopped mid-pass, and,
when asked, a quick look on the first boards that the run's manifest declares:
:func:`passes`).
Training rows are counted and otherwise ignored: scores are of validation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sokoban_published import PUBLISHED_FILES

from ..layout import ROOT, VALIDATION_DATA
from ..protocol import STRATA, stratum_of
from ..records.rows import BoardRow, DataError
from ..rules.board import Board
from ..records.episodes import EpisodeRecord, log_holder
from ..records.boards import board_file, board_file_from
from ..records.manifest import BOARDS, declares_quick_look
from ..records.run import OpenRun
from ..records.tasks import load_validation
from .inputs import incomplete_hint, read_log
from .stats import success_interval

DEFAULT_VALIDATION = ROOT / VALIDATION_DATA
REPLAY_HINT = f"play the current {VALIDATION_DATA} again and log every board of each pass"
REPEATED_HINT = ("the log holds two runs' passes (a re-run in the same folder, or a resume without the "
                 "patched trainer, which sets them aside): give each run its own trainer.experiment_name or "
                 "env.fairness_log, or move one run's rows out of the log")


@dataclass(frozen=True)
class BoardSet:
    """The published validation boards in stored order, with their lengths and strata."""

    sha256: str
    task_ids: tuple[str, ...]
    lengths: np.ndarray
    strata: np.ndarray
    rows: tuple[BoardRow, ...] = ()

    @property
    def by_id(self) -> dict[str, Board]:
        """Each validation board by its task ID, as a replay plays it."""
        return {row.task_id: row.board for row in self.rows}

    @classmethod
    def load(cls, path: Path | str | None = None, logs: list[OpenRun] = ()) -> "BoardSet":
        """Read ``path``; by default from where the first of the runs ``logs`` with a run manifest
        recording it read its boards (a folder, or a Hub revision tried in the local cache
        first), else the clone's, else the pinned release's from the Hub (see
        :func:`sokoban_tools.records.boards.board_file`); refused unless it is the published
        evaluation file."""
        if path is None:
            path = _recorded_board_file(logs)
        rows = load_validation(board_file(VALIDATION_DATA, cache_first=True) if path is None else path)
        lengths = np.array([row.shortest_solution_length for row in rows])
        return cls(PUBLISHED_FILES[VALIDATION_DATA]["sha256"], tuple(row.task_id for row in rows),
                   lengths, np.array([stratum_of(int(n)) for n in lengths]), tuple(rows))


def _recorded_board_file(logs: list[OpenRun]) -> Path | None:
    """The evaluation file where the first log's manifest says its run read the boards."""
    for log in logs:
        manifest = log.manifest()
        if manifest is not None and manifest.get(BOARDS) is not None:
            return board_file_from(VALIDATION_DATA, manifest[BOARDS])
    return None


@dataclass(frozen=True)
class LoggedRow:
    """A row of a log and where it is: the run whose log holds it (opened once for every reader
    of its rows) and the line."""

    opened: OpenRun
    line: int
    record: EpisodeRecord

    @property
    def log(self) -> str:
        """The log's path, as its user named it."""
        return self.opened.log_text

    @property
    def location(self) -> str:
        """``file:line``, as messages name a row."""
        return f"{self.log}:{self.line}"


@dataclass(frozen=True)
class Group:
    """One validation pass: a method's run at an update, outcomes in board order (of every
    validation board, or of the first ones for a quick look)."""

    method: str
    run: str
    update: int
    won: np.ndarray
    returns: np.ndarray
    location: str  # of its first row
    logs: tuple[str, ...] = ()  # the logs its rows are in


@dataclass(frozen=True)
class Logs:
    """The validation rows of some logs, and how many training rows they also hold; per log,
    each (method, run)'s validation updates and last training update (``None``: none)."""

    rows: list[LoggedRow]
    training_rows: int
    runs: dict[Path, dict[tuple[str, str], tuple[set[int], int | None]]]


def read_logs(opened: list[OpenRun]) -> Logs:
    """Every row of the logs of the runs ``opened``, checked line by line; validation rows kept.
    An empty log, or logs without a validation row, are refused naming the files."""
    rows, training, runs = [], 0, {}
    paths = [run.log for run in opened]
    for run in opened:
        path = run.log
        records = read_log(path)
        if not records:
            raise DataError(f"{path}: is empty, but an episode log holds one JSON line per finished episode; "
                            f"give the log the runtime wrote")
        found: dict[tuple[str, str], list] = {}  # (method, run): [validated updates, last trained update]
        for line, record in enumerate(records, start=1):
            seen = found.get((record.method, record.run))
            if seen is None:
                seen = found[(record.method, record.run)] = [set(), None]
            if record.phase == "validation":
                rows.append(LoggedRow(run, line, record))
                seen[0].add(record.update)
            else:
                training += 1
                seen[1] = record.update if seen[1] is None else max(seen[1], record.update)
        runs[path] = {key: (validated, trained) for key, (validated, trained) in found.items()}
    if not rows:
        raise DataError(f"{', '.join(map(str, paths))}: hold{'s' if len(paths) == 1 else ''} no validation rows "
                        f"({training:,} training rows); log the validation passes (phase \"validation\")")
    return Logs(rows, training, runs)


def check_board_set(rows: list[LoggedRow], boards: BoardSet) -> None:
    """Refuse rows of different board sets, and rows of any set but the published one
    (``rows``, from :func:`read_logs`, are never empty)."""
    first = rows[0]
    for row in rows:
        if row.record.evaluation_sha256 != first.record.evaluation_sha256:
            raise DataError(
                f"{row.location}: evaluation_sha256 {row.record.evaluation_sha256[:12]}… differs from "
                f"{first.record.evaluation_sha256[:12]}… at {first.location}: these logs played different "
                f"board sets, which cannot be compared; {REPLAY_HINT}")
    if first.record.evaluation_sha256 != boards.sha256:
        raise DataError(
            f"{first.location}: evaluation_sha256 {first.record.evaluation_sha256} is not that of the "
            f"published {VALIDATION_DATA} ({boards.sha256}): the log played another board set, such as "
            f"an old 1,000-row file or a stale copy; {REPLAY_HINT}")


@dataclass(frozen=True)
class InProgress:
    """An incomplete pass that is the last thing its run wrote to its log: a pass being
    written now (a run validating), or the one a run that stopped was writing (its resume
    sets it aside and plays it again). ``holder``: the live writer holding the log's lock."""

    method: str
    run: str
    update: int
    log: str
    played: int
    boards: int
    holder: str | None
    refusal: str  # the error when nothing else is there to score


@dataclass(frozen=True)
class Passes:
    """What :func:`passes` finds: complete passes, passes in progress, quick looks."""

    complete: list[Group]
    in_progress: list[InProgress]
    quick_looks: list[Group]


def group_rows(rows: list[LoggedRow], boards: BoardSet, hint=incomplete_hint) -> list[Group]:
    """The complete validation passes in ``rows``, sorted by method, run and update; any
    incomplete pass is refused (:func:`passes` takes a run's last one as in progress)."""
    return passes(rows, boards, hint=hint).complete


def passes(rows: list[LoggedRow], boards: BoardSet, runs: dict | None = None,
           hint=incomplete_hint, quick_looks: bool = False) -> Passes:
    """The complete validation passes in ``rows``, sorted by method, run and update; with
    ``runs`` (:attr:`Logs.runs`), the passes in progress: an incomplete pass that is its run's last
    validation in its log, with no training row after it; with ``quick_looks``, the incomplete
    passes that hold exactly the first boards in stored order where the manifest beside the log
    declares a quick look (:func:`~sokoban_tools.records.manifest.boards_note`). Any other
    incomplete pass is refused, naming the log, the lines the pass holds and the boards it misses,
    with the fix ``hint`` gives (the run, boards logged, boards) for the tool that wrote it; and so
    is a log with nothing but passes in progress (nothing to score yet)."""
    position = {task_id: i for i, task_id in enumerate(boards.task_ids)}
    seen: dict[tuple[str, str, int], dict[str, LoggedRow]] = {}
    for row in rows:
        record = row.record
        key = (record.method, record.run, record.update)
        if record.task_id not in position:
            raise DataError(f"{row.location}: task_id {record.task_id!r} is not one of the "
                            f"{len(position)} validation boards; {REPLAY_HINT}")
        played = seen.setdefault(key, {})
        if record.task_id in played:
            raise DataError(f"{row.location}: {record.task_id} repeats in {_name(key)} (first at "
                            f"{played[record.task_id].location}): a repeated validation pass; {REPEATED_HINT}")
        played[record.task_id] = row
    groups, in_progress, quick = [], [], []
    for key, played in sorted(seen.items()):
        first_row = next(iter(played.values()))
        log = first_row.log
        missing = [task_id for task_id in boards.task_ids if task_id not in played]
        if missing and quick_looks and _quick_look(played, boards, first_row.opened):
            quick.append(_group(key, played, boards.task_ids[:len(played)]))
            continue
        if missing:
            shown = ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
            refusal = (f"{log}: an incomplete validation pass in {_lines(played.values())}: {_name(key)} misses "
                       f"{len(missing)} of the {len(position)} validation boards ({shown}); "
                       f"{hint(first_row.opened, len(played), len(position))}")
            if runs is None or not _last_of_its_run(key, played.values(), runs):
                raise DataError(refusal)
            in_progress.append(InProgress(*key, log, len(played), len(position), log_holder(log), refusal))
            continue
        groups.append(_group(key, played, boards.task_ids))
    if not groups and not quick and in_progress:
        raise DataError(f"{in_progress[0].refusal} (no complete pass to score yet)")
    return Passes(groups, in_progress, quick)


def _group(key: tuple[str, str, int], played: dict[str, LoggedRow], task_ids: tuple[str, ...]) -> Group:
    """The pass ``key`` whose rows ``played`` hold the boards ``task_ids``, in that order."""
    ordered = [played[task_id].record for task_id in task_ids]
    return Group(*key, np.array([r.won for r in ordered]), np.array([r.episode_return for r in ordered]),
                 next(iter(played.values())).location, tuple(dict.fromkeys(row.log for row in played.values())))


def _quick_look(played: dict[str, LoggedRow], boards: BoardSet, opened: OpenRun) -> bool:
    """Whether a pass holding ``played`` is the quick look its run's manifest declares: the
    first boards in stored order, none other."""
    return (declares_quick_look(opened.readable_manifest())
            and set(played) == set(boards.task_ids[:len(played)]))


def _lines(rows) -> str:
    """Where the rows of a pass are: ``lines a–b`` of the first row's log, then ``and lines c–d
    of LOG`` for any other log that holds some."""
    spans: dict[str, list[int]] = {}
    for row in rows:
        spans.setdefault(row.log, []).append(row.line)
    return " and ".join(f"lines {min(lines)}–{max(lines)}" + (f" of {log}" if i else "")
                        for i, (log, lines) in enumerate(spans.items()))


def _last_of_its_run(key: tuple[str, str, int], played, runs: dict) -> bool:
    """Whether the pass ``key`` is written in one log, as the last validation of its run there,
    with no training row of a later update (which a run writes only once the pass is done)."""
    logs = {row.log for row in played}
    if len(logs) != 1:
        return False
    method, run, update = key
    validated, trained = runs[Path(logs.pop())][(method, run)]
    return update == max(validated) and (trained is None or trained <= update)


def _name(key: tuple[str, str, int]) -> str:
    method, run, update = key
    return f"the group method={method!r} run={run!r} update={update}"


def success(won: np.ndarray) -> dict:
    """Boards, wins, success rate and its 95% interval (:func:`.stats.success_interval`)."""
    boards, wins = len(won), int(np.sum(won))
    return {"boards": boards, "wins": wins, "success": wins / boards, "ci95": list(success_interval(wins, boards))}


def score_group(group: Group, boards: BoardSet) -> dict:
    """A pass's success overall, per stratum and per shortest solution length (over the boards
    it played: all, or a quick look's first ones)."""
    strata, lengths = boards.strata[:len(group.won)], boards.lengths[:len(group.won)]
    return {
        "method": group.method,
        "run": group.run,
        "update": group.update,
        **success(group.won),
        "mean_return": float(np.mean(group.returns)),
        "by_stratum": {label: success(group.won[strata == label]) for label, _, _ in STRATA if np.any(strata == label)},
        "by_length": {str(n): success(group.won[lengths == n]) for n in sorted(set(lengths.tolist()))},
    }

