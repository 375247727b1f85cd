"""The results table: every entry of ``results/`` verified, then ranked with exact statistics.

    python -m sokoban_tools leaderboard [RESULTS] [--json]      # verify and rank (default: results/)
    python -m sokoban_tools leaderboard --add NAME --log LOG --model M --submitted-by WHO --link URL
                                        [--date YYYY-MM-DD] [--notes TEXT] [--run R --update U]
    python -m sokoban_tools leaderboard --eval-results NAME [--out .eval_results]   # for the model's Hub page

An entry is one folder, ``results/<name>/``, holding one validation pass: the episode log
``episodes.jsonl``, its run manifest ``episodes.jsonl.manifest.json`` and ``entry.json``
(:data:`ENTRY_KEYS`: who submitted which model and method, where to read more, when, the
SHA-256 of both files and the controlled settings as submitted). ``--add`` writes one from a
log, checking it first. An entry is refused, in one line naming it and the reason, unless:

- its manifest is well formed and of the published boards (their digests);
- its log is one complete pass over the published validation boards, of the manifest's method,
  every record holding its moves;
- every episode replays from its moves to the outcome, actions and return it records
  (:mod:`sokoban_tools.evaluation.replay`): a flipped ``won``, a swapped board, an edited
  count are named by record and board;
- the manifest's settings are those the entry was submitted with, and both files are the
  bytes it was submitted with (an edit the checks above cannot see);
- its folder is one ``--add`` could have written (:func:`folder_problem`): a name of lower-case
  letters, digits, ``.``, ``_`` and ``-``, a real folder holding its own regular files, no
  symbolic link (to another entry, or outside ``results/``), so no entry is counted twice and
  none is read from elsewhere;
- its episodes are no other entry's: the same moves on every board are one entry, whatever
  its labels, and the earliest submitted (then the first by name) is the one ranked.

The rest are ranked by success, with the exact (Clopper-Pearson) 95% interval, overall and
per stratum. Beside it, per entry: the share of its turns whose answer was not a move (action 0,
a text model's main failure), the requests and tokens an episode took where the manifest
counts them (``evaluate`` does), who submitted it, and what the replay checked. The replay is
this command's, which CI runs on every pull request: it proves a log consistent with the boards
and the rules, not who played it. Each entry is compared with the best on the shared boards by McNemar's exact
test, the p-values Holm-corrected over the comparisons; an entry whose corrected p-value is
at least 0.05 is statistically indistinguishable from the best. Every controlled setting that
differs between entries is listed with each entry's value: shown, never hidden.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Iterator

import numpy as np

from sokoban_published import ChecksumError

from ..files import json_document, sha256_bytes, write_atomic
from ..help_text import Parser
from ..paths import PathError, os_error_line, read_bounded, unwritable
from ..protocol import STRATA
from ..records import strict_json
from ..records.boards import BoardsNotFound
from ..records.episodes import MOVE_LETTERS, read_episodes
from ..records.manifest import BUDGET_UNIT, SETTING, manifest_path
from ..records.run import OpenRun
from ..records.rows import DataError
from .hub_benchmark import EVAL_RESULTS_FOLDER, TASK_IDS, eval_results, eval_results_name
from .inputs import check_rows_against_manifests, incomplete_hint, refuse_tuning_logs, refuse_tuning_run
from .replay import Verification, verify_rows
from .score import percent_interval, table
from .scoring import BoardSet, Group, Logs, check_board_set, group_rows, read_logs, success
from .stats import SUCCESS_INTERVAL, PairedTable, holm_adjusted, sign_test_p

RESULTS = Path("results")
LOG = "episodes.jsonl"
MANIFEST = manifest_path(LOG).name
ENTRY = "entry.json"
FORMAT = "sokoban-fairness results entry 1"
ENTRY_KEYS = ("format", "model", "method", "submitted_by", "link", "date", "sha256", "settings")
TEXT_KEYS = ("model", "method", "submitted_by", "link")
NOTES = "notes"
ALPHA = 0.05
NO_MOVE = MOVE_LETTERS[0]  # a turn whose answer was not a move
REQUESTS = "requests"  # the cost entries evaluate keeps (sokoban_tools.integrations.served.client.Usage)
TOKENS = ("prompt_tokens", "completion_tokens")
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


class EntryRefused(DataError):
    """A results entry that fails a check; the message names the entry and why."""


@dataclass(frozen=True)
class Entry:
    """A verified entry: its folder's name, ``entry.json``, manifest, pass and replay, and the
    digest of its episodes (:func:`episodes_digest`)."""

    name: str
    info: dict
    manifest: dict
    group: Group
    verification: Verification
    episodes: str
    turns: int
    no_move_turns: int  # turns whose answer was not a move


def entry_document(model: str, method: str, submitted_by: str, link: str, day: str, log: bytes,
                   manifest: bytes, notes: str | None = None) -> bytes:
    """The ``entry.json`` of a log and manifest submitted as they are."""
    document = {"format": FORMAT, "model": model, "method": method, "submitted_by": submitted_by, "link": link,
                "date": day, "sha256": {LOG: sha256_bytes(log), MANIFEST: sha256_bytes(manifest)},
                "settings": strict_json.loads(manifest)["settings"]}
    if notes:
        document[NOTES] = notes
    return json_document(document)


def _checked_info(path: Path) -> dict:
    """``entry.json``, well formed; :class:`EntryRefused` naming the key otherwise."""
    try:
        info = strict_json.loads(read_bounded(path, 1 << 20, "results entry").decode("utf-8"))
    except ValueError as err:
        raise EntryRefused(f"{path}: not a JSON object ({err})") from None
    if not isinstance(info, dict):
        raise EntryRefused(f"{path}: not a JSON object")
    missing = [key for key in ENTRY_KEYS if key not in info]
    unknown = [key for key in info if key not in ENTRY_KEYS and key != NOTES]
    if missing or unknown:
        raise EntryRefused(f"{path}: keys {ENTRY_KEYS} (and optional {NOTES!r}) expected; missing {missing}, "
                           f"unknown {unknown}")
    if info["format"] != FORMAT:
        raise EntryRefused(f"{path}: format must be {FORMAT!r}, got {info['format']!r}")
    for key in TEXT_KEYS:
        if not isinstance(info[key], str) or not info[key].strip():
            raise EntryRefused(f"{path}: {key} must be non-empty text, got {info[key]!r}")
    try:
        date.fromisoformat(info["date"])
    except (TypeError, ValueError):
        raise EntryRefused(f"{path}: date must be YYYY-MM-DD, got {info['date']!r}") from None
    if not isinstance(info["sha256"], dict) or sorted(info["sha256"]) != sorted((LOG, MANIFEST)):
        raise EntryRefused(f"{path}: sha256 must hold the digests of {LOG} and {MANIFEST}")
    older = set(SETTING) - {BUDGET_UNIT}  # an entry of a manifest written before the unit, which reads with it
    if not isinstance(info["settings"], dict) or set(info["settings"]) not in (set(SETTING), older):
        raise EntryRefused(f"{path}: settings must hold every controlled setting, as the manifest had them")
    return info


_HUB_MODEL_ID = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


def is_hub_model_id(model: str) -> bool:
    """Whether ``model`` is a Hub model id (``owner/name``, or an old one-part name), the only
    model a ``.eval_results`` file can be published for."""
    return bool(_HUB_MODEL_ID.fullmatch(model)) and ".." not in model and "--" not in model


def shown(name: str) -> str:
    """An entry's name as a report prints it: as it is when ``--add`` could have given it,
    quoted with its escapes otherwise (a newline in a folder's name starts no line of its own)."""
    return name if _NAME.fullmatch(name) else json.dumps(name)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an entry, or ``None``: the one rule of ``--add`` and the table."""
    if _NAME.fullmatch(name):
        return None
    return (f"entry name {shown(name)}: use lower-case letters, digits, '.', '_' and '-', starting with a "
            f"letter or digit")


def folder_problem(folder: Path, name: str | None = None) -> str | None:
    """Why ``folder`` cannot hold the entry ``name`` (default: the folder's own name), or ``None``:
    the one place that decides what an entry folder may hold (see the module docstring)."""
    name = folder.name if name is None else name
    problem = name_problem(name)
    if problem:
        return f"{problem}; rename the folder"
    if folder.is_symlink():
        return (f"{folder}: is a symbolic link (to {os.readlink(folder)}), but an entry is a folder of its own "
                f"files; copy the entry in with leaderboard --add, or remove the link")
    if not folder.is_dir():
        return f"{folder}: is not a folder; an entry is a folder holding {ENTRY}, {LOG} and {MANIFEST}"
    for file in (ENTRY, LOG, MANIFEST):
        path = folder / file
        if path.is_symlink():
            return (f"{path}: is a symbolic link (to {os.readlink(path)}), but an entry holds its own files; "
                    f"put the file itself there (leaderboard --add copies it), or remove the entry")
        if not path.is_file():
            return f"{folder}: has no {file}; an entry holds {ENTRY}, {LOG} and {MANIFEST}, regular files"
    return None


def episodes_digest(records) -> str:
    """What makes a pass the same episodes, whatever its labels: each board's moves."""
    return sha256_bytes("".join(sorted(f"{r.task_id} {r.moves}\n" for r in records)).encode("utf-8"))


def check_pass(logs: Logs, boards: BoardSet, hint=incomplete_hint) -> tuple[Group, Verification]:
    """The one validation pass of ``logs`` (rows named by their own file and line), checked as an
    entry's: of the published boards, complete (else refused with the fix ``hint`` gives), of its
    manifest's method, every record replayed."""
    check_board_set(logs.rows, boards)
    groups = group_rows(logs.rows, boards, hint=hint)  # refuses a dropped, repeated or unknown board
    if len(groups) != 1:
        raise EntryRefused(f"{logs.rows[0].log}: holds {len(groups)} validation passes "
                           f"({', '.join(f'{g.method}/{g.run}/update {g.update}' for g in groups)}); "
                           f"an entry is one pass")
    check_rows_against_manifests(logs.rows)
    unverified = [row.location for row in logs.rows if not row.record.verifiable]
    if unverified:
        raise EntryRefused(f"{unverified[0]}: {len(unverified)} records hold no moves, so their outcomes "
                           f"cannot be replayed; log the pass again with this version")
    return groups[0], verify_rows(logs.rows, boards.by_id)


def load_entry(folder: Path, boards: BoardSet, name: str | None = None, submitted: bool = True) -> Entry:
    """The verified entry ``name`` (default: the folder's name) in ``folder``; :class:`EntryRefused`
    (or another :class:`DataError`) naming the first check it fails. A ``submitted`` entry passed them
    when it was added, so a board missing from it now was removed since; an entry being added is the
    run's log."""
    problem = folder_problem(folder, name)
    if problem:
        raise EntryRefused(problem)
    info = _checked_info(folder / ENTRY)
    opened = OpenRun(folder / LOG)  # its manifest read once: checked, compared and digested
    manifest = opened.required_manifest()  # its format, and the published boards' digests
    refuse_tuning_run(manifest, folder / LOG, "the leaderboard")
    logs = read_logs([opened])
    if logs.training_rows:
        raise EntryRefused(f"{folder / LOG}: holds {logs.training_rows} training rows; an entry is one validation "
                           f"pass")
    group, verification = check_pass(logs, boards, hint=_record_removed if submitted else incomplete_hint)
    changed = [key for key in SETTING if key in info["settings"] and manifest["settings"][key] != info["settings"][key]]
    if changed:
        key = changed[0]
        raise EntryRefused(f"{folder / MANIFEST}: setting {key} is {json.dumps(manifest['settings'][key])}, but "
                           f"the entry was submitted with {json.dumps(info['settings'][key])}"
                           + (f" ({len(changed) - 1} more changed)" if len(changed) > 1 else ""))
    for file, data in ((LOG, (folder / LOG).read_bytes()), (MANIFEST, opened.manifest_bytes)):
        found = sha256_bytes(data)
        if found != info["sha256"][file]:
            raise EntryRefused(f"{folder / file}: changed since it was submitted (SHA-256 {found[:12]}…, "
                               f"{ENTRY} records {info['sha256'][file][:12]}…)")
    moves = "".join(row.record.moves for row in logs.rows)
    return Entry(folder.name if name is None else name, info, manifest, group, verification,
                 episodes_digest(row.record for row in logs.rows), len(moves), moves.count(NO_MOVE))


def _record_removed(run: OpenRun, played: int, boards: int) -> str:
    """The fix for an entry whose pass misses a board: ``--add`` took it only complete, so a
    record was removed from the entry's log since, which no rerun of the run would mend."""
    return (f"the pass was complete when the entry was added (--add refuses any other), so "
            f"{'its record was' if boards - played == 1 else 'their records were'} removed from {run.log} since: "
            f"restore the file as it was submitted (git checkout -- {run.log}), or add the entry again from the "
            f"run's own log with leaderboard --add")


def entry_folders(results: Path) -> list[Path]:
    """The entry folders of ``results``, in name order: every folder and every symbolic link
    (refused by :func:`folder_problem`, never passed over), but the hidden ones (an add's staging)."""
    if not results.is_dir():
        raise DataError(f"{results}: no such folder; give the results folder of a clone (results/)")
    return sorted(path for path in results.iterdir()
                  if (path.is_dir() or path.is_symlink()) and not path.name.startswith("."))


def leaderboard(results: Path = RESULTS, validation: Path | None = None) -> dict:
    """Every entry of ``results`` verified; the refused ones named, the rest ranked (see the
    module docstring)."""
    folders = entry_folders(results)
    boards = BoardSet.load(validation)  # the published file, never where a submitted manifest points
    entries, refused = [], []
    for folder in folders:
        try:
            entries.append(load_entry(folder, boards))
        except (DataError, ChecksumError, PathError) as err:
            refused.append({"entry": folder.name, "reason": str(err)})
    first: dict[str, Entry] = {}
    for entry in sorted(entries, key=lambda e: (e.info["date"], e.name)):  # the earliest submitted stands
        if entry.episodes in first:
            reason = same_episodes(results / entry.name, first[entry.episodes].name)
            refused.append({"entry": entry.name, "reason": reason})
        else:
            first[entry.episodes] = entry
    entries = [entry for entry in entries if first[entry.episodes] is entry]
    refused.sort(key=lambda refusal: refusal["entry"])
    entries.sort(key=lambda e: (-int(e.group.won.sum()), e.name))
    rows = [{
        "entry": e.name, **{key: e.info[key] for key in (*TEXT_KEYS, "date")},
        **success(e.group.won),
        "by_stratum": {label: success(e.group.won[boards.strata == label])
                       for label, _, _ in STRATA if np.any(boards.strata == label)},
        "mean_return": float(np.mean(e.group.returns)),
        "replayed": e.verification.verified,
        "returns_replayed": not e.verification.returns_unchecked,
        "turns": e.turns,
        "no_move_share": e.no_move_turns / e.turns if e.turns else 0.0,
        **per_episode(e.manifest["costs"], len(e.group.won)),
    } for e in entries]
    if entries:
        best = entries[0]
        tables = [PairedTable.of(best.group.won, e.group.won) for e in entries[1:]]
        p_values = [sign_test_p(t.a_only, t.b_only) for t in tables]
        for row, table, p, adjusted in zip(rows[1:], tables, p_values, holm_adjusted(p_values)):
            row["vs_best"] = {"best_only": table.a_only, "entry_only": table.b_only, "p_value": p,
                              "p_holm": adjusted, "indistinguishable": adjusted >= ALPHA}
        rows[0]["vs_best"] = None
    return {
        "results": str(results),
        "evaluation_sha256": boards.sha256,
        "interval": SUCCESS_INTERVAL,
        "test": (f"McNemar's exact test against the best entry on the {len(boards.task_ids)} shared boards, "
                 f"Holm-corrected over {max(len(entries) - 1, 0)} comparisons; indistinguishable: corrected "
                 f"p >= {ALPHA}"),
        "entries": rows,
        "settings_differ": settings_differences(entries),
        "refused": refused,
    }


def same_episodes(folder: Path, other: str) -> str:
    """The refusal of an entry whose episodes are entry ``other``'s."""
    return (f"{folder}: holds the same episodes as the entry {other} (every board's moves alike), so it is the "
            f"same pass under other labels; one pass is one entry: remove this one")


def per_episode(costs: dict, episodes: int) -> dict:
    """Requests, prompt tokens and completion tokens per episode, from the manifest's cost
    entries; ``None`` where the manifest does not count them (a scripted policy asks no server)."""
    return {f"{name}_per_episode": costs[name]["value"] / episodes if name in costs else None
            for name in (REQUESTS, *TOKENS)}


def settings_differences(entries: list[Entry]) -> list[dict]:
    """Every controlled setting whose value is not the same in all ``entries``, with each one's value."""
    differences = []
    for key in SETTING:
        values = {e.name: e.manifest["settings"][key] for e in entries}
        if len({json.dumps(value) for value in values.values()}) > 1:
            differences.append({"key": key, "values": values})
    return differences


def rate(entry: dict) -> str:
    """``success [low, high]`` of an entry or stratum, in percent."""
    return percent_interval(entry["success"], entry["ci95"], ", ")


def verdict(row: dict) -> str:
    """How an entry stands against the best: ``best``, ``≈ best`` or ``below best``, with the corrected p."""
    versus = row["vs_best"]
    if versus is None:
        return "best"
    return f"{'≈ best' if versus['indistinguishable'] else 'below best'} (p={versus['p_holm']:.2g})"


ANSWERS = ("Answers, costs and verification per entry: the share of turns whose answer was not a move (action 0), "
           "requests and tokens per episode where the run manifest counts them, who submitted the entry, and what "
           "replaying its episodes checked:")
PROVENANCE = ("Verified by this command, which CI runs on every pull request (and `reproduce --check` again): every "
              "episode replayed from its moves on its stored board. A replay proves a log consistent with the boards "
              "and the rules, not who played it or with which model: that rests on the submitter's word.")


def _tokens(row: dict) -> str:
    prompt, completion = (row[f"{name}_per_episode"] for name in TOKENS)
    return "—" if prompt is None or completion is None else f"{prompt:,.0f} + {completion:,.0f}"


def answers_rows(rows: list[dict]) -> list[list[str]]:
    """The header and one row per entry of the answers, costs and verification table."""
    return [["entry", "submitted by", "turns", "not a move", "requests/episode",
             "tokens/episode (prompt + completion)", "replayed"]] + [
        [r["entry"], r["submitted_by"], f"{r['turns']:,}", f"{r['no_move_share']:.1%}",
         "—" if r["requests_per_episode"] is None else f"{r['requests_per_episode']:,.1f}", _tokens(r),
         f"{r['replayed']}/{r['boards']}: won, actions" + (", return" if r["returns_replayed"] else "")]
        for r in rows]


def render(report: dict) -> str:
    """The readable form of a :func:`leaderboard` report."""
    lines = [f"REFUSED {shown(refusal['entry'])}: {refusal['reason']}" for refusal in report["refused"]]
    rows = report["entries"]
    if not rows:
        return "\n".join(lines + ["No entry passed its checks."])
    strata = list(rows[0]["by_stratum"])
    header = ["rank", "entry", "model", "method", "success [95% exact]", *[f"{s} actions" for s in strata],
              "vs best (Holm)"]
    body = [[str(i), r["entry"], r["model"], r["method"], rate(r),
             *[f"{r['by_stratum'][s]['wins']}/{r['by_stratum'][s]['boards']}" for s in strata], verdict(r)]
            for i, r in enumerate(rows, start=1)]
    lines += [*([""] if lines else []),
              f"{len(rows)} {'entry' if len(rows) == 1 else 'entries'} verified (every episode replayed from its "
              f"moves) on evaluation.jsonl "
              f"{report['evaluation_sha256'][:12]}…; success with its {report['interval']}; {report['test']}.",
              "", table([header] + body), "", ANSWERS, "", table(answers_rows(rows)), "", PROVENANCE]
    unchecked = [r["entry"] for r in rows if not r["returns_replayed"]]
    if unchecked:
        lines += ["", f"Returns not replayed (the manifest declares another reward scheme than the runtime's; "
                      f"outcome and actions were): {', '.join(unchecked)}."]
    lines += ["", "Settings that differ between entries:" if report["settings_differ"] else
              "Every controlled setting is the same in all entries."]
    for difference in report["settings_differ"]:
        values = ", ".join(f"{name} {json.dumps(value)}" for name, value in difference["values"].items())
        lines.append(f"  {difference['key']}: {values}")
    return "\n".join(lines)


def _chosen_pass(opened: OpenRun, run: str | None, update: int | None) -> Logs:
    """The rows of the log of ``opened``'s one validation pass (chosen by ``run`` and ``update`` when it
    holds several), each named by its line in the log."""
    log = opened.log
    rows = read_logs([opened]).rows
    keys = sorted({(row.record.method, row.record.run, row.record.update) for row in rows})
    chosen = [key for key in keys if (run is None or key[1] == run) and (update is None or key[2] == update)]
    if len(chosen) != 1:
        listed = ", ".join(f"--run {k[1]} --update {k[2]}" for k in keys) or "none"
        raise DataError(f"{log}: {'no' if not chosen else len(chosen)} validation passes match; choose one "
                        f"({listed})")
    return Logs([row for row in rows if (row.record.method, row.record.run, row.record.update) == chosen[0]], 0, {})


def add_entry(results: Path, name: str, log: Path, model: str, submitted_by: str, link: str, day: str,
              notes: str | None = None, run: str | None = None, update: int | None = None,
              validation: Path | None = None) -> Path:
    """Write ``results/name`` from one pass of ``log`` and its manifest, after checking it as
    :func:`leaderboard` will; nothing is left behind if a check fails."""
    problem = name_problem(name)
    if problem:
        raise DataError(problem)
    folder = results / name
    if folder.exists() or folder.is_symlink():
        raise DataError(f"{folder}: exists already; choose another name")
    opened = OpenRun(log)
    refuse_tuning_logs([opened], "leaderboard --add")
    chosen = _chosen_pass(opened, run, update)
    manifest_bytes = opened.manifest_bytes  # read once, and checked
    boards = BoardSet.load(validation, [opened])
    check_pass(chosen, boards)  # first on the user's log, so a refusal names its file and line
    records = [row.record for row in chosen.rows]
    lines = "".join(record.to_line() + "\n" for record in records).encode("utf-8")
    results.mkdir(parents=True, exist_ok=True)
    with _adding(results):
        same = _entry_with_episodes(results, episodes_digest(records))
        if same is not None:
            raise DataError(f"{log}: this pass holds the same episodes as the entry {same} (every board's moves "
                            f"alike), so it is entered already as {results / same}; one pass is one entry")
        staging = Path(tempfile.mkdtemp(prefix=STAGING + f"{name}.", dir=results))
        try:
            (staging / LOG).write_bytes(lines)
            (staging / MANIFEST).write_bytes(manifest_bytes)
            (staging / ENTRY).write_bytes(entry_document(model, records[0].method, submitted_by, link, day, lines,
                                                         manifest_bytes, notes))
            load_entry(staging, boards, name, submitted=False)
            staging.rename(folder)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return folder


def _entry_with_episodes(results: Path, digest: str) -> str | None:
    """The name of the entry of ``results`` whose episodes have ``digest``, if one has (an entry
    whose log cannot be read is the table's to refuse, not the same episodes)."""
    for folder in entry_folders(results):
        if folder_problem(folder):
            continue
        try:
            if episodes_digest(read_episodes(folder / LOG)) == digest:
                return folder.name
        except (DataError, PathError, OSError):
            continue
    return None


def write_eval_results(results: Path, name: str, out: Path, validation: Path | None = None) -> Path:
    """Write the ``.eval_results`` file a model repository publishes for the entry ``results/name``,
    once the entry passes every check of the leaderboard (:mod:`.hub_benchmark`)."""
    folder = results / name
    if not folder.is_dir():
        raise DataError(f"{folder}: no such entry; give the name of a folder of {results}/ "
                        f"({', '.join(p.name for p in entry_folders(results)) or 'none'})")
    entry = load_entry(folder, BoardSet.load(validation))
    if entry.info["model"].strip().lower().startswith("none"):
        raise EntryRefused(f"{folder}: is a scripted policy's entry (model {entry.info['model']!r}), which no model "
                           f"repository publishes; give an entry of a model on the Hub")
    if not is_hub_model_id(entry.info["model"]):
        raise EntryRefused(f"{folder}: its model {json.dumps(entry.info['model'])} is not a Hub model id "
                           f"(owner/name, letters, digits, '.', '_' and '-'), so no model repository publishes it; "
                           f"give an entry of a model on the Hub")
    observation = entry.manifest["settings"]["image_processing.observation"]
    if observation not in TASK_IDS:
        raise EntryRefused(f"{folder}: played the {observation!r} observation, which is none of the benchmark's "
                           f"tasks ({', '.join(f'{task} ({mode})' for mode, task in TASK_IDS.items())}); give an "
                           f"entry of a model played in one of them")
    text = eval_results(entry.name, entry.info, entry.manifest, int(entry.group.won.sum()), len(entry.group.won))
    path = out / eval_results_name(name)
    problem = unwritable(path, "--out")
    if problem:
        raise PathError(problem)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.encode("utf-8"))
    return path


STAGING = ".staging-"  # results/.staging-<name>.<random>/: an entry being written, renamed once checked


@contextlib.contextmanager
def _adding(results: Path) -> Iterator[None]:
    """``results`` locked for one ``--add``; the staging folders of an add that was killed
    (found under the lock, so no live add's) are removed, each with a line."""
    fd = os.open(results, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for stale in sorted(results.glob(STAGING + "*")):
            shutil.rmtree(stale)
            print(f"removed {stale}, the staging folder of an add that was stopped", file=sys.stderr)
        yield
    finally:
        os.close(fd)  # releases the lock


HUB_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
WEB_LINK = re.compile(r"https?://[A-Za-z0-9.-]+\.[A-Za-z]{2,}(:[0-9]+)?(/[^\s]*)?")


def option_problem(model: str, link: str) -> str | None:
    """Why ``--model`` is not a Hub model id (or ``none`` for a scripted policy) or ``--link`` not
    a web address, or ``None``: the entry shows both, and ``--eval-results`` names the model's
    repository."""
    if not (HUB_MODEL_ID.fullmatch(model) and ".." not in model and "--" not in model
            or model.strip().lower().startswith("none")):
        return (f"--model {model!r}: give the Hub id of the model evaluated, ORG/NAME as its page's address ends, "
                f"or 'none (...)' for a policy with no model repository (a scripted policy, an MLP trained from "
                f"scratch), saying what it is")
    if not WEB_LINK.fullmatch(link):
        return (f"--link {link!r}: give a web address (https://...) where the method can be read about: a paper, a "
                f"repository, a page")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m sokoban_tools leaderboard",
                    description=__doc__.split("\n\n")[0],
                    formatter_class=argparse.RawDescriptionHelpFormatter,
                    epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("results", nargs="?", type=Path, default=RESULTS, help="the results folder (default results/)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--evaluation", type=Path, default=None, help="a local copy of fairness/evaluation.jsonl")
    adding = parser.add_argument_group("adding an entry")
    adding.add_argument("--add", metavar="NAME", help="write results/NAME from --log (checked first)")
    adding.add_argument("--log", type=Path, help="the episode log, its run manifest beside it")
    adding.add_argument("--model", help="the model evaluated (a Hub id, or 'none' for a scripted policy)")
    adding.add_argument("--submitted-by", help="who submits the entry")
    adding.add_argument("--link", help="where to read about the method (a paper, a repository, a page)")
    adding.add_argument("--date", default=None, help="YYYY-MM-DD (default: today)")
    adding.add_argument("--notes", default=None, help="a short note shown with the entry")
    adding.add_argument("--run", default=None, help="the run of the pass, when the log holds several")
    adding.add_argument("--update", type=int, default=None, help="the update of the pass, when the log holds several")
    hub = parser.add_argument_group("publishing a verified entry on the Hub")
    hub.add_argument("--eval-results", metavar="NAME", help="write the .eval_results/*.yaml that the model "
                     "repository of the verified entry results/NAME publishes, so its page shows the score")
    hub.add_argument("--out", type=Path, default=Path(EVAL_RESULTS_FOLDER),
                     help=f"the folder to write it in (default: {EVAL_RESULTS_FOLDER}/, as in a model repository)")
    args = parser.parse_args(argv)
    for option, value in (("--add", args.add), ("--eval-results", args.eval_results)):
        problem = name_problem(value) if value is not None else None
        if problem:
            parser.error(f"{option}: {problem}")
    if args.eval_results is not None:
        adding_given = [f"--{key.replace('_', '-')}" for key in ("add", "log", "model", "submitted_by", "link", "date",
                                                                 "notes", "run", "update")
                        if getattr(args, key) is not None]
        if adding_given:
            parser.error(f"--eval-results writes the Hub file of an entry already in the table, and "
                         f"{', '.join(adding_given)} belong to --add, which enters one: run --add first, then "
                         f"--eval-results NAME alone")
    elif args.out != Path(EVAL_RESULTS_FOLDER):
        parser.error("--out is the folder of --eval-results NAME: give the entry's name")
    try:
        if args.eval_results is not None:
            path = write_eval_results(args.results, args.eval_results, args.out, args.evaluation)
            print(f"wrote {path}: the verified entry {args.eval_results} as the model repository publishes it "
                  f"(add it to .eval_results/ of that repository by a pull request)")
            return 0
        if args.add is not None:
            missing = [f"--{key.replace('_', '-')}" for key in ("log", "model", "submitted_by", "link")
                       if getattr(args, key) is None]
            if missing:
                parser.error(f"--add needs {', '.join(missing)}")
            problem = option_problem(args.model, args.link)
            if problem:
                parser.error(problem)
            folder = add_entry(args.results, args.add, args.log, args.model, args.submitted_by, args.link,
                               args.date or date.today().isoformat(), args.notes, args.run, args.update,
                               args.evaluation)
            print(f"wrote {folder}: {LOG}, {MANIFEST} and {ENTRY}; it passes every check of the leaderboard")
            return 0
        report = leaderboard(args.results, args.evaluation)
    except (DataError, ChecksumError, PathError, BoardsNotFound) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"error: {os_error_line(err)}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 1 if report["refused"] else 0


if __name__ == "__main__":
    sys.exit(main())
