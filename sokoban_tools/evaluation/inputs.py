"""What a file given to ``score`` or ``compare`` as an episode log is, and the fix for its source.

Users hand over what a run left behind, and not always the log: the run
manifest beside it, VAGEN's own ``summary.json``, an ``evaluate --boards 8``
quick look, a log whose manifest is another method's. A message about line 1
or a missing newline would send them repairing a file that is not broken; so
each is named for what it is, with the fix for the tool that wrote it. The
log's own row checks (:mod:`sokoban_tools.records.episodes`) stay the rule;
this module only explains their refusals, and checks the method a manifest names.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..paths import PathError, read_bounded
from ..records.episodes import EpisodeRecord, read_episodes
from ..protocol import VALIDATION_SIZE
from ..records.manifest import FORMAT, NOTES, SUFFIX, TUNING, ManifestError, declares_quick_look
from ..records.run import OpenRun
from ..records.rows import DataError

MANIFEST_FORMAT = FORMAT.rsplit(" ", 1)[0]  # any version of the run manifest
# Keys of the summary.json VAGEN's evaluator writes into its dump folder.
VAGEN_SUMMARY_KEYS = {"n_episodes", "success_rate", "episodes"}
EVALUATE = "python -m sokoban_tools evaluate"
QUICK_LOOK_HINT = "score --quick-look shows the pass as it is, as no result"
TRAINER_HINT = ("a run interrupted during validation leaves such a pass: resume or restart it with the "
                "patched trainer, which sets the pass aside, or move these rows out of the log")


def read_log(path: Path) -> list[EpisodeRecord]:
    """The checked rows of the episode log ``path``; a file that is not a log at all
    is refused saying what it is and what to give instead."""
    try:
        return read_episodes(path)
    except DataError as err:
        found = not_a_log(path)
        if found is None:
            raise
        raise DataError(found) from err


DOCUMENT_LIMIT = 8 << 20  # bytes: a manifest or VAGEN's summary is far smaller; a larger file is some log


def _document(path: Path) -> object | None:
    """The JSON value ``path`` holds as a whole, when it is one document and not JSON lines."""
    try:
        text = read_bounded(path, DOCUMENT_LIMIT).decode("utf-8")
        return json.loads(text) if "\n" in text.strip() or not text.endswith("\n") else _manifest_line(text)
    except (PathError, UnicodeDecodeError, ValueError):
        return None


def _manifest_line(text: str) -> dict | None:
    """A manifest written on one line is a document too; any other one-line object is a log row."""
    value = json.loads(text)
    return value if isinstance(value, dict) and str(value.get("format", "")).startswith(MANIFEST_FORMAT) else None


# How the files a run leaves beside its log begin when they are pictures or documents, not text.
SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
              (b"GIF8", "a GIF image"), (b"%PDF-", "a PDF document"), (b"PAR1", "a Parquet table"))


def _binary_kind(path: Path) -> str | None:
    """What ``path`` is by its first bytes, when it is one of :data:`SIGNATURES`."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return None
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "a WebP image"
    return next((kind for signature, kind in SIGNATURES if head.startswith(signature)), None)


def not_a_log(path: Path) -> str | None:
    """Why ``path`` is no episode log, naming what it is, or ``None`` when it looks like one."""
    kind = _binary_kind(path)
    if kind is not None:
        return (f"{path}: is {kind}, not an episode log, which holds one JSON object per finished episode, a "
                f"line each (docs/scoring.md); give the .jsonl log the run wrote, not a file made from it")
    value = _document(path)
    if value is None or isinstance(value, dict) and "task_id" in value:  # none, or a log's one torn row
        return None
    if isinstance(value, dict) and str(value.get("format", "")).startswith(MANIFEST_FORMAT):
        log = path.with_name(path.name[:-len(SUFFIX)]) if path.name.endswith(SUFFIX) else None
        beside = f"{log}, the log it sits beside" if log is not None else "the log it was written beside"
        return (f"{path}: is a run manifest (the settings of method {value.get('method')!r}), not an episode log; "
                f"give {beside} (score and compare read the manifest from there themselves)")
    if isinstance(value, dict) and VAGEN_SUMMARY_KEYS <= set(value):
        return (f"{path}: is VAGEN's summary.json ({value.get('n_episodes')} episodes), its evaluator's own "
                f"aggregate, which names no board, so not an episode log; write the log from the same dump "
                f"with `python -m sokoban_tools vagen log --config YOUR.yaml --episode-log LOG` (or evaluate "
                f"with `python -m sokoban_tools vagen evaluate --episode-log LOG ...`) and give LOG")
    kind = f"a JSON object with the keys {', '.join(list(value)[:5])}" if isinstance(value, dict) else "one JSON document"
    return (f"{path}: is {kind}, not an episode log, which holds one JSON object per finished episode, a line "
            f"each (docs/scoring.md); give the log the run wrote")


def refuse_tuning_run(manifest: dict | None, log: Path | str, command: str) -> None:
    """Refuse the log of a tuning run (``train --tuning``, its manifest's ``tuning`` entry) to ``command``,
    which reads validation passes as results: its passes played the tuning split, held out of the
    training pool, not the validation boards, and a search's passes are no result."""
    if manifest is None or TUNING not in manifest:
        return
    tuning = manifest[TUNING]
    raise ManifestError(
        f"{log}: is the log of a tuning run ({tuning.get('protocol')}, see its manifest's tuning entry): its "
        f"validation passes played the {tuning.get('validation_boards')} tuning boards held out of the training pool "
        f"({tuning.get('selection')}), not the {VALIDATION_SIZE} validation boards, so {command} does not take it; "
        f"a tuning run only chooses a configuration (docs/training.md, Tuning split): train the chosen one without "
        f"--tuning (train --config K) and give {command} that run's log")


def refuse_tuning_logs(runs: list[OpenRun], command: str) -> None:
    """:func:`refuse_tuning_run` for the log of each of ``runs``, by the manifest beside it (one that
    does not read is left to the checks that need it)."""
    for run in runs:
        refuse_tuning_run(run.readable_manifest(), run.log, command)


def incomplete_hint(run: OpenRun, played: int, boards: int) -> str:
    """The fix for a pass of the log of ``run`` holding ``played`` of the ``boards``, for the tool
    its manifest says wrote it (without a readable manifest, a trainer's)."""
    manifest = run.readable_manifest()
    notes = manifest.get(NOTES) if manifest is not None else None
    notes = notes if isinstance(notes, dict) else {}
    if str(notes.get("evaluator", "")).startswith(EVALUATE):
        if declares_quick_look(manifest):
            return (f"this log is an `evaluate --boards {played}` quick look, and score reads complete passes "
                    f"only: play the other {boards - played} boards by running the same evaluate command with "
                    f"--resume and without --boards ({QUICK_LOOK_HINT})")
        return (f"evaluate stopped before the end of its pass: run the same evaluate command with --resume to "
                f"play the {boards - played} boards left")
    if str(notes.get("trainer", "")).startswith("TRL "):  # sokoban_tools.integrations.trl
        if declares_quick_look(manifest):
            return (f"a TRL run validated on the first {played} boards of the {boards} (--validation-boards "
                    f"{played}), a quick look, and score reads complete passes only: run it without "
                    f"--validation-boards ({QUICK_LOOK_HINT})")
        return "the TRL run stopped in this validation pass, and does not resume: run it again into a new log"
    if "inspect_log" in notes:  # written by inspect-log from the Inspect AI task's log
        return (f"this log is an `inspect eval --limit {played}` quick look, and score reads complete passes "
                f"only: run the task on all {boards} boards (without --limit) and convert that log with "
                f"`python -m sokoban_tools inspect-log`"
                + (f" ({QUICK_LOOK_HINT})" if declares_quick_look(manifest) else ""))
    if notes.get("trainer") == "VAGEN":
        return ("VAGEN's run did not play every board: finish it with run.resume=skip_completed into the same "
                "experiment.dump_dir, then write the log again with `python -m sokoban_tools vagen log`")
    return TRAINER_HINT


def check_rows_against_manifests(rows: list, required: bool = True) -> None:
    """Refuse a row (a ``scoring.LoggedRow``) that the manifest beside its log does not cover:
    a row of another method than the manifest names (the settings it records, and the schedule
    checked against them, are another run's), or an episode longer than its action horizon.
    Without ``required`` a log with no readable manifest is not checked (``score`` reads such logs)."""
    for row in rows:
        log = row.log
        manifest = row.opened.required_manifest() if required else row.opened.readable_manifest()
        if manifest is None:
            continue
        if row.record.method != manifest["method"]:
            raise ManifestError(
                f"{row.location}: a record of method {row.record.method!r}, but the manifest beside the log "
                f"({row.opened.manifest_path.name}) is of method {manifest['method']!r}, so the settings and schedule "
                f"it records are another run's; put the manifest of the run of {row.record.method!r} beside the "
                f"log (that run wrote it), or give each method its own log and manifest")
        horizon = manifest["settings"]["action_horizon"]
        if horizon is not None and row.record.actions > horizon:
            raise ManifestError(f"{row.location}: an episode of {row.record.actions} actions, but the manifest "
                                f"beside {log} declares an action horizon of {horizon}; the log and its "
                                f"manifest are of different runs, or the manifest is wrong")
