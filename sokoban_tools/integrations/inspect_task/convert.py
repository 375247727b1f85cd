"""``python -m sokoban_tools inspect-log``: an Inspect log of the task as our episode log and manifest.

    python -m sokoban_tools inspect-log logs/2026-12-03T18-40-00_sokoban-fairness_abc.eval --log runs/m.jsonl
        [--method NAME --run NAME --revision REV --server-kind KIND --settings-from MANIFEST]

Inspect keeps what a run of :mod:`.task` played in its own log (``.eval`` or ``.json``);
``score``, ``compare`` and ``leaderboard --add`` read an episode log and the run manifest
beside it. This writes both from the Inspect log, after checking all of it first (nothing
is written from a log that fails a check, each refused in one line naming what is wrong
and the fix):

- it is a log of this task (its metadata says so) on the published validation boards;
- the run finished and every sample has its episode: no sample failed, none is missing,
  one epoch; a run with ``--limit N`` is converted as ``evaluate --boards N`` is logged, a
  quick look that ``score`` refuses as not the protocol;
- every episode is the one the sample's own model answers played: one request a turn, each
  answer's projection (read as the solver read it) the move of its turn, the sample's score
  its outcome, labelled with the boards the run played (their SHA-256) at update 0; and it
  replays from its moves to the outcome, actions and return it records.

The records are labelled with the model as its server names it (the method, as ``evaluate``
labels them), ``seed<SEED>`` and update 0, each with its moves. The manifest is the one
``evaluate`` writes for the same settings (:func:`..served.evaluate.manifest_for`), with the
decoding the model events show was sent, and notes naming Inspect, the provider, the model
and the log; its costs are the run's requests, tokens and wall time.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from sokoban_published import PUBLISHED_FILES, ChecksumError

from ...evaluation.replay import check_record
from ...extras import install_advice
from ...help_text import Parser
from ...layout import VALIDATION_DATA
from ...paths import PathError, error_text, unwritable
from ...protocol import DEFAULT_MAX_STEPS
from ...records.boards import BoardsNotFound, load_boards
from ...records.episodes import EpisodeRecord, episode_writer, moves_of
from ...records.manifest import NOTES, boards_note, read_manifest
from ...records.rows import DataError
from ...runtime.projection import project_answer
from ..served.client import Decoding, public_url
from ..served.evaluate import LAUNCHER, Played, manifest_for, next_step
from . import EPISODE_KEY, REGISTERED_TASK, TASK, TASK_FORMAT

PROG = "python -m sokoban_tools inspect-log"
HOW_TO_RUN = f"inspect eval {REGISTERED_TASK} --model PROVIDER/MODEL"


class Refused(DataError):
    """An Inspect log that cannot become an episode log; the message says why and the fix."""


def parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("inspect_log", type=Path, metavar="INSPECT_LOG",
                   help=f"the log `{HOW_TO_RUN}` wrote (logs/*.eval or *.json)")
    p.add_argument("--log", required=True, type=Path, help="the episode log to write (a new file); the run "
                   "manifest goes beside it")
    p.add_argument("--method", default=None, help="the method label of the records (default: the model as its "
                   "server names it, as evaluate labels them)")
    p.add_argument("--run", default=None, help="the run label (default: seed<SEED>, the task's seed)")
    p.add_argument("--revision", default=None, help="the weights' revision (commit) or digest, recorded")
    p.add_argument("--server-kind", default=None, help="what served the model, recorded (default: the Inspect "
                   "provider, e.g. openai-api)")
    p.add_argument("--settings-from", type=Path, default=None, metavar="MANIFEST",
                   help="the run manifest of the training run the weights come from (as evaluate takes it)")
    return p


def read_inspect_log(path: Path):
    """The Inspect log at ``path``, samples included; :class:`Refused` if it is none."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise Refused(f"the inspect-ai package is not installed: {install_advice('inspect')}") from None
    if not path.is_file():
        raise Refused(f"{path}: no such file; give the log `inspect eval` wrote (it prints its path; by default "
                      f"under ./logs/)")
    try:
        return read_eval_log(str(path))
    except Exception as err:  # Inspect raises its own and pydantic's errors on a file of another kind
        reason = " ".join(str(err).split())[:200]
        raise Refused(f"{path}: is not an Inspect log ({type(err).__name__}: {reason}); give the .eval or "
                      f".json log `inspect eval` wrote") from None


def check_task(path: Path, log) -> dict:
    """The task's metadata, once the log is known to be this task's, of its one epoch, finished."""
    spec = log.eval
    metadata = spec.metadata or {}
    if metadata.get("format") != TASK_FORMAT or spec.task.rsplit("/", 1)[-1] != TASK:
        raise Refused(f"{path}: is an Inspect log of the task {spec.task!r}, not of {REGISTERED_TASK}: convert "
                      f"a log of `{HOW_TO_RUN}`")
    published = PUBLISHED_FILES[VALIDATION_DATA]["sha256"]
    if metadata.get("evaluation_sha256") != published:
        raise Refused(f"{path}: played another {VALIDATION_DATA} (SHA-256 {metadata.get('evaluation_sha256')}), "
                      f"not the published one ({published}): run the task again on the published boards")
    if (spec.config.epochs or 1) != 1:
        raise Refused(f"{path}: played {spec.config.epochs} epochs; a pass plays each board once: run the task "
                      f"again without --epochs")
    if spec.config.sample_id is not None:
        raise Refused(f"{path}: played boards chosen by --sample-id, which is no pass: run the task again without "
                      f"--sample-id (--limit N plays the first N boards, a quick look)")
    if log.status != "success":
        raise Refused(f"{path}: the run's status is {log.status!r}, not 'success', so boards are missing or "
                      f"failed: finish it with `inspect eval-retry {path}` and convert the log that writes")
    return metadata


def boards_expected(path: Path, log, rows: list) -> list:
    """The boards the run was to play: all of them, or the first N of ``--limit N``."""
    limit = log.eval.config.limit
    if limit is None:
        return rows
    if not isinstance(limit, int):
        raise Refused(f"{path}: played the boards {limit[0] + 1}-{limit[1]} (--limit {limit[0]},{limit[1]}), "
                      f"which is no pass: run the task again with --limit N (the first N) or without it")
    return rows[:limit]


def answer_of(event) -> str:
    """The answer text of a model event, as the solver read it (:func:`.task.answer_text`)."""
    from .task import response_text

    text = response_text(event)
    return event.output.completion if text is None else text


def answers_problem(sample, record: EpisodeRecord) -> str | None:
    """What the sample's own model answers contradict in its ``record``, or ``None``: one request a
    turn, each answer's projection (as the solver read it) the move of its turn, the score the outcome."""
    from inspect_ai.scorer import CORRECT

    answers = [event for event in sample.events if event.event == "model"]
    projected = moves_of(project_answer(answer_of(event))[0] for event in answers)
    if len(answers) != len(record.moves):
        return (f"it holds {len(answers)} model requests for the {len(record.moves)} turns of its episode, not one "
                f"request a turn")
    if projected != record.moves:
        turn = next(i for i, (a, b) in enumerate(zip(projected, record.moves)) if a != b)
        return (f"its episode's moves {record.moves!r} are not the model's answers, which give {projected!r} "
                f"(turn {turn + 1}: {record.moves[turn]!r} recorded, {projected[turn]!r} answered)")
    score = next(iter((sample.scores or {}).values()), None)
    if score is not None and (score.value == CORRECT) != record.won:
        return f"its score is {score.value!r} but its episode says won={str(record.won).lower()}"
    return None


def episodes(path: Path, log, rows: list, sha256: str, method: str | None, run: str | None
             ) -> list[EpisodeRecord]:
    """Every board's record, in board order, checked (see the module docstring)."""
    by_id = {row.task_id: row for row in rows}
    wanted = [row.task_id for row in boards_expected(path, log, rows)]
    found: dict[str, EpisodeRecord] = {}
    for sample in log.samples or []:
        where = f"{path}: sample {sample.id}"
        if sample.error is not None:
            raise Refused(f"{where} failed ({' '.join(sample.error.message.split())[:200]}): finish the run with "
                          f"`inspect eval-retry {path}` and convert the log that writes")
        stored = sample.store.get(EPISODE_KEY)
        if not isinstance(stored, dict):
            raise Refused(f"{where} holds no episode (the store has no {EPISODE_KEY}): the log was not written "
                          f"by this task's solver; run `{HOW_TO_RUN}`")
        if str(sample.id) in found:
            raise Refused(f"{where} appears twice: convert a log of one pass")
        try:
            values = {key: value for key, value in stored.items() if key != "stratum"}
            values["episode_return"] = values.pop("return")
            record = EpisodeRecord(**values)
        except (TypeError, ValueError, KeyError) as err:
            raise Refused(f"{where}: its episode is no record ({err}): the log was edited or written by "
                          f"another version; run the task again") from None
        if record.task_id != str(sample.id) or record.task_id not in by_id:
            raise Refused(f"{where}: its episode is of board {record.task_id!r}, not a validation board of "
                          f"this sample: the log was edited; run the task again")
        if (record.phase, record.update, record.evaluation_sha256) != ("validation", 0, sha256):
            raise Refused(f"{where}: its episode is labelled phase {record.phase!r}, update {record.update}, boards of "
                          f"SHA-256 {record.evaluation_sha256}, but the task played the validation boards of "
                          f"{VALIDATION_DATA} (SHA-256 {sha256}) at update 0: the log was edited; run the task again")
        problem = check_record(record, by_id[record.task_id].board, DEFAULT_MAX_STEPS)
        if problem:
            raise Refused(f"{where}: {problem}; the log does not record what was played: run the task again")
        problem = answers_problem(sample, record)
        if problem:
            raise Refused(f"{where}: {problem}; the log does not record what the model answered: run "
                          f"`{HOW_TO_RUN}` again")
        found[record.task_id] = replace(record, method=method or record.method, run=run or record.run)
    missing = [task_id for task_id in wanted if task_id not in found]
    extra = [task_id for task_id in found if task_id not in set(wanted)]
    if missing or extra:
        which = (f"misses {len(missing)} of its {len(wanted)} boards ({', '.join(missing[:3])}"
                 f"{', ...' if len(missing) > 3 else ''})" if missing else
                 f"holds boards beyond its {len(wanted)} ({', '.join(extra[:3])})")
        raise Refused(f"{path}: {which}: finish the run with `inspect eval-retry {path}`, or run the task again, "
                      f"and convert the log that writes")
    return [found[task_id] for task_id in wanted]


def model_events(log) -> list:
    return [event for sample in log.samples or [] for event in sample.events if event.event == "model"]


def decoding_of(path: Path, log) -> Decoding:
    """The decoding the requests were sent with, the same in every one (the seed aside)."""
    configs = {(e.config.temperature, e.config.top_p, e.config.top_k, e.config.max_tokens)
               for e in model_events(log)} or {(log.plan.config.temperature, log.plan.config.top_p,
                                                  log.plan.config.top_k, log.plan.config.max_tokens)}
    if len(configs) != 1:
        raise Refused(f"{path}: its requests were sent with {len(configs)} decodings ({sorted(configs, key=str)[:2]}"
                      f"), not one: run the task again with one")
    temperature, top_p, top_k, max_tokens = configs.pop()
    temperature = LAUNCHER["temperature"] if temperature is None else temperature
    return Decoding(temperature=temperature, top_p=LAUNCHER["top_p"] if top_p is None else top_p,
                    top_k=-1 if top_k is None else top_k, do_sample=temperature > 0,
                    max_tokens=LAUNCHER["response_length"] if max_tokens is None else max_tokens)


def served_model(model: str) -> tuple[str, str]:
    """(provider, the model as its server names it) of an Inspect model name: ``openai-api/local/m``
    is provider ``openai-api`` (its service ``local``) serving ``m``; ``vllm/org/m`` serves ``org/m``."""
    provider, _, rest = model.partition("/")
    if provider == "openai-api":
        service, _, name = rest.partition("/")
        return f"{provider}/{service}", name
    return provider, rest


def manifest_of(path: Path, log, options, method: str, records: list[EpisodeRecord]) -> dict:
    """The run manifest: ``evaluate``'s for the same settings, with Inspect's notes."""
    spec = log.eval
    provider, name = served_model(spec.model)
    task_args = spec.task_args or {}
    decoding = decoding_of(path, log)
    played = Played(
        mode=task_args.get("mode", "rgb_array"),
        history_length=int(task_args.get("history_length", LAUNCHER["history_length"])),
        max_steps=DEFAULT_MAX_STEPS,
        max_prompt_length=int(task_args.get("max_prompt_length", LAUNCHER["max_prompt_length"])),
        model=name, revision=options.revision, method=method, seed=int(task_args.get("seed", 0)),
        settings_from=options.settings_from,
        trained=None if options.settings_from is None else read_manifest(options.settings_from))
    manifest = manifest_for(played, decoding, options.server_kind or provider, len(records))
    notes = manifest[NOTES]
    version = spec.packages.get("inspect_ai", "unknown")
    notes.update({
        "evaluator": f"inspect eval {REGISTERED_TASK} (Inspect AI {version}), converted by {PROG}",
        "inspect_log": path.name,
        "inspect_model": spec.model,
        "provider": provider,
        "base_url": public_url(spec.model_base_url) if spec.model_base_url else None,
        "boards": boards_note(len(records), f" (inspect eval --limit {len(records)})"),
    })
    return manifest


def costs_of(log, records: list[EpisodeRecord]) -> dict[str, tuple[str, float]]:
    """The run's costs in ``evaluate``'s entries: answered requests (one a turn), retries, tokens, wall time."""
    usage = list((log.stats.model_usage or {}).values())
    started, completed = log.stats.started_at, log.stats.completed_at
    wall = (datetime.fromisoformat(completed) - datetime.fromisoformat(started)).total_seconds() \
        if started and completed else 0.0
    return {"requests": ("requests", sum(len(record.moves) for record in records)),
            "retried_requests": ("requests", sum(event.retries or 0 for event in model_events(log))),
            "prompt_tokens": ("tokens", sum(u.input_tokens for u in usage)),
            "completion_tokens": ("tokens", sum(u.output_tokens for u in usage)),
            "wall_time": ("seconds", round(max(wall, 0.0), 3))}


def convert(options) -> tuple[list[EpisodeRecord], dict]:
    """Check the Inspect log and write the episode log and manifest; the records and manifest written."""
    path = options.inspect_log
    log = read_inspect_log(path)
    metadata = check_task(path, log)
    dataset_dir = (log.eval.task_args or {}).get("dataset_dir")
    hub_revision = (log.eval.task_args or {}).get("hub_revision")
    rows, sha256 = load_boards(VALIDATION_DATA, dataset_dir, hub_revision)
    if sha256 != metadata["evaluation_sha256"]:
        raise Refused(f"{path}: played boards of SHA-256 {metadata['evaluation_sha256']}, not {sha256}")
    _, name = served_model(log.eval.model)
    method = options.method or name
    records = episodes(path, log, rows, sha256, method, options.run)
    manifest = manifest_of(path, log, options, method, records)
    with episode_writer(options.log) as writer:
        if options.log.exists() and options.log.stat().st_size:
            raise Refused(f"{options.log}: exists and holds records; give a new --log (a converted log is one pass)")
        writer.write_manifest(manifest, options.log)
        writer.append(records)
        manifest = writer.add_costs(costs_of(log, records))
    return records, manifest


def main(argv: list[str] | None = None) -> int:
    p = parser()
    options = p.parse_args(argv)
    for name in ("method", "run", "revision", "server_kind"):
        value = getattr(options, name)
        if value is not None and not value.strip():
            p.error(f"--{name.replace('_', '-')} must not be empty")
    problem = unwritable(options.log)
    if problem:
        p.error(f"--log {problem}")
    try:
        records, manifest = convert(options)
    except (DataError, ChecksumError, PathError, BoardsNotFound, OSError, ValueError) as err:
        print(f"error: {error_text(err)}", file=sys.stderr)
        return 1
    wins = sum(record.won for record in records)
    print(f"{records[0].method} ({records[0].run}): {wins}/{len(records)} boards won ({wins / len(records):.1%}), "
          f"every episode replayed from its moves; wrote {options.log} and its manifest")
    print(next_step(len(records), options.log, "inspect eval --limit"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
