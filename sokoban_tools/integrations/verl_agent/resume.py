"""A fair run across crashes: checkpoints carry the sampler, and the log holds each record once.

verl-agent resumes from its latest ``global_step_N/`` checkpoint (``trainer.resume_mode=auto``)
or starts again from step 0 (no checkpoint, ``resume_mode=disable``); either way the same
episode log is written again. The patched trainer calls, one function each:

* :func:`open_run` from ``make_fair_envs`` at start: a torn last line of the log and a
  manifest that does not read are set aside and reported; the manifest is written (or
  kept, with its costs, for the same method and settings; another run's is refused);
* :func:`save_checkpoint_state` from ``_save_checkpoint``, before verl-agent's
  ``latest_checkpointed_iteration.txt``: the training episodes still open are recorded, and
  the sampler's state, the run's labels and the log's record counts are written atomically
  to ``global_step_N/`` (:data:`STATE_NAME`), once the log is on disk (synced);
* :func:`restore_checkpoint_state` from ``_load_checkpoint``: that state is restored, so the
  boards drawn after the resume are those an uninterrupted run draws; a missing state (an
  unpatched run's checkpoint), or one altered, of another seed, of another dataset
  release, of another run label (``env.fairness_run`` or ``env.fairness_method`` changed
  since) or copied from another step (its sampler has not drawn one batch per step, as
  verl-agent's does), is refused naming the file and the way out;
* :func:`begin_run` from ``fit`` once the checkpoint is loaded: resumed from step N, the
  log must still hold every record the checkpoint's run had written, unchanged (the state
  holds their SHA-256: a record edited since is refused; a deleted, truncated
  or replaced log is refused, naming the records missing: the passes before the
  checkpoint cannot be played again, so a log without them would pass for a whole run);
  then the
  records the run writes again (validation at updates >= N, among them a pass the kill
  interrupted, or > N when the run does not validate first, ``trainer.val_before_train=false``;
  training at updates > N) move to a side file beside the log; started
  from step 0 over a log that holds records, all of them move (and the manifest's costs
  start again, the old manifest kept beside them), so a re-run in the same folder is a
  new run, never a second copy in one log. Nothing is deleted; each move prints one line;
* :func:`end_run` from ``fit`` before it returns: the last step's open episodes are recorded
  (verl-agent never calls ``close()``).

Costs (:meth:`FairRun.add_costs`, from ``record_costs``) are kept in memory and the
manifest, whose size does not grow with the updates, is replaced atomically each step.
A resumed run's costs include the work it did again after the checkpoint: they are what
the run spent.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterator

from sokoban_published import PUBLISHED_FILES, RELEASE

from ...files import json_document, write_atomic
from ...layout import TRAIN_DATA
from ...paths import PathError, read_bounded
from ...records import strict_json
from ...records.episodes import EpisodeRecord, episode_writer, iter_episodes, next_aside_number
from ...records.manifest import ManifestError, check_fits, manifest_path, merge_costs, read_manifest

STATE_NAME = "sokoban_fairness.json"  # in global_step_N/
STATE_FORMAT = "sokoban-fairness checkpoint 3"  # 2: with the run's labels and the log's record counts; 3: digests
MAX_STATE_BYTES = 1 << 20


class CheckpointStateError(ValueError):
    """A checkpoint whose sampler state is missing, altered or of another run."""


class ResumedLogError(ValueError):
    """A resume whose episode log no longer holds what the checkpoint's run had written."""


class FairRun:
    """One fair run's log, manifest and environments, for the trainer's hooks."""

    def __init__(self, log: Path | None, manifest: dict | None):
        self.log, self.manifest = log, manifest
        self.writer = None if log is None else episode_writer(log)
        self.training = self.validation = None  # set by make_fair_envs
        self.restored: int | None = None  # the step of the checkpoint restore_checkpoint_state loaded
        self.restored_log: dict | None = None  # the log's record counts that checkpoint saw
        self.restored_digests: dict | None = None  # and the SHA-256 of its records (LOG_DIGESTS)

    def add_costs(self, entries) -> None:
        """Add a step's cost entries (name: (unit, amount)) and replace the manifest."""
        if self.log is not None:
            path = manifest_path(self.log)
            merge_costs(self.manifest, entries, str(path))
            write_atomic(path, json_document(self.manifest))

    def set_aside(self, reason: str, keep):
        """Move the records ``keep`` rejects (and a torn line) beside the log, with a notice."""
        moved = self.writer.set_aside(reason, keep)
        if moved is not None:
            print(moved.notice(self.log), flush=True)
        return moved


def open_run(episode_log: Path | None, manifest: dict | None) -> FairRun:
    """The run whose records go to ``episode_log`` (``None``: no log) with the run ``manifest``,
    both checked by ``make_fair_envs``: see the module docstring."""
    if episode_log is None:
        return FairRun(None, None)
    log = Path(os.path.abspath(episode_log))
    log.parent.mkdir(parents=True, exist_ok=True)
    run = FairRun(log, manifest)
    run.set_aside("torn-line", keep=lambda record: True)
    path = manifest_path(log)
    if path.exists():
        try:
            old = read_manifest(path)
        except (ManifestError, PathError) as err:
            side = log.with_name(f"{log.name}.aside-{next_aside_number(log)}.torn-manifest.manifest.json")
            os.replace(path, side)
            print(f"sokoban-fairness: the manifest {path} does not read ({err}); moved it to {side.name} "
                  f"beside it (kept, not deleted) and wrote it again", flush=True)
        else:
            check_fits(log, manifest)  # another run's is refused
            manifest["costs"] = old["costs"]
    write_atomic(path, json_document(manifest))
    return run


def fair_run(envs) -> FairRun:
    """The :class:`FairRun` of verl-agent's training environment manager ``envs``."""
    return envs.fair_run


def save_checkpoint_state(envs, folder: Path | str, global_steps: int) -> Path:
    """Record the open training episodes and write the sampler's state into the checkpoint
    ``folder`` (``global_step_N/``) atomically; returns the file."""
    run = fair_run(envs)
    run.training.end_episodes()
    if run.writer is not None:
        run.writer.sync()  # the records the state counts are on disk before the state is
    config = run.training.config
    state = {"format": STATE_FORMAT, "update": global_steps, "release": RELEASE,
             "train_sha256": PUBLISHED_FILES[TRAIN_DATA]["sha256"], "fairness_method": config.method,
             "fairness_run": config.run, "log": None if run.log is None else log_counts(run.log, global_steps),
             "log_sha256": None if run.log is None else log_digests(run.log, global_steps),
             "sampler": run.training.sampler_state()}
    path = Path(folder) / STATE_NAME
    write_atomic(path, json_document(state))
    return path


def restore_checkpoint_state(envs, folder: Path | str) -> None:
    """Continue the sampler of the checkpoint ``folder`` (``global_step_N/``); a
    :class:`CheckpointStateError` naming the file when it is missing, altered or foreign."""
    run = fair_run(envs)
    folder = Path(folder)
    path = folder / STATE_NAME
    way_out = ("resume from a checkpoint this run saved with the sokoban-fairness patch "
               "(trainer.resume_from_path=.../global_step_N), or start again from step 0 with "
               "trainer.resume_mode=disable (the log's records are set aside, not deleted)")
    if not path.is_file():
        raise CheckpointStateError(f"{path}: missing, so the checkpoint {folder.name} cannot continue the run's "
                                   f"training boards (a checkpoint of a run without the patch, or one the "
                                   f"patch did not finish saving); {way_out}")
    try:
        state = strict_json.loads(read_bounded(path, MAX_STATE_BYTES, "checkpoint state"))
    except (ValueError, PathError) as err:
        raise CheckpointStateError(f"{path}: does not read ({err}): it was altered or half-written; "
                                   f"{way_out}") from None
    step = folder.name.rsplit("global_step_", 1)[-1]
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointStateError(f"{path}: format {found!r}, expected {STATE_FORMAT!r}; {way_out}")
    update = state.get("update")
    if isinstance(update, bool) or not isinstance(update, int) or str(update) != step:
        raise CheckpointStateError(f"{path}: holds the state of update {state.get('update')!r}, but the checkpoint "
                                   f"is of step {step}: it was copied from another checkpoint; {way_out}")
    config = run.training.config
    for key, now in (("fairness_run", config.run), ("fairness_method", config.method)):
        if state.get(key) != now:
            raise CheckpointStateError(f"{path}: the checkpoint is of env.{key}={state.get(key)!r}, but this resume "
                                       f"has env.{key}={now!r}: the log would mix two runs' labels; resume with "
                                       f"env.{key}={state.get(key)!r}, or {way_out}")
    sampler = state.get("sampler")
    drawn = sampler.get("updates_drawn") if isinstance(sampler, dict) else None
    if drawn != state["update"]:
        raise CheckpointStateError(f"{path}: its sampler's updates_drawn is {drawn!r}, but the checkpoint is of step "
                                   f"{step} and verl-agent draws one batch a step: the state was copied from "
                                   f"another checkpoint or altered; {way_out}")
    published = PUBLISHED_FILES[TRAIN_DATA]["sha256"]
    if state.get("train_sha256") != published:
        raise CheckpointStateError(f"{path}: was saved by a run of another dataset release "
                                   f"({state.get('release')!r}, {TRAIN_DATA} {str(state.get('train_sha256'))[:12]}), "
                                   f"not {RELEASE} ({published[:12]}): its boards cannot be continued with "
                                   f"these; resume with the release it was trained on, or {way_out}")
    counts = state.get("log")
    if run.log is not None and not (isinstance(counts, dict) and set(counts) == set(LOG_COUNTS)
                                    and all(type(counts[key]) is int and counts[key] >= 0 for key in LOG_COUNTS)):
        raise CheckpointStateError(f"{path}: its log counts {counts!r} are not the {', '.join(LOG_COUNTS)} "
                                   f"save_checkpoint_state writes (it was altered, or saved without a log); "
                                   f"{way_out}")
    digests = state.get("log_sha256")
    if run.log is not None and not (isinstance(digests, dict) and set(digests) == set(LOG_DIGESTS)
                                    and all(isinstance(digests[key], str) for key in LOG_DIGESTS)):
        raise CheckpointStateError(f"{path}: its log digests {digests!r} are not the {', '.join(LOG_DIGESTS)} "
                                   f"save_checkpoint_state writes (it was altered, or saved without a log); "
                                   f"{way_out}")
    try:
        run.training.restore_sampler(sampler)
    except (ValueError, TypeError) as err:
        raise CheckpointStateError(f"{path}: its sampler state is refused: {err}; {way_out}") from None
    run.restored, run.restored_log, run.restored_digests = state["update"], counts, digests


LOG_COUNTS = ("training", "validation", "validation_at_step")
# The SHA-256 of the log's records at the checkpoint (as their canonical lines, in order), with and
# without the pass of the checkpoint's step, which a resume that validates first plays again.
LOG_DIGESTS = ("with_step_pass", "without_step_pass")


LOG_FIX = "repair or remove that line, or move the log away and start the run again"


def _records(log: Path) -> Iterator[EpisodeRecord]:
    """The log's records one line at a time, checked: a checkpoint of a long run reads its whole
    log and keeps none of it (the driver's memory does not grow with the updates)."""
    return iter_episodes(log, LOG_FIX) if log.exists() else iter(())


def log_counts(log: Path, step: int) -> dict:
    """What the log holds when the checkpoint of ``step`` is saved: its training and validation
    records, and the validation records of ``step`` itself (which a resume may play again)."""
    counts = dict.fromkeys(LOG_COUNTS, 0)
    for record in _records(log):
        counts[record.phase] += 1
        counts["validation_at_step"] += record.phase == "validation" and record.update == step
    return counts


def log_digests(log: Path, step: int) -> dict:
    """The :data:`LOG_DIGESTS` of the log when the checkpoint of ``step`` is saved."""
    digests = {key: hashlib.sha256() for key in LOG_DIGESTS}
    for record in _records(log):
        line = (record.to_line() + "\n").encode("utf-8")
        digests["with_step_pass"].update(line)
        if not (record.phase == "validation" and record.update == step):
            digests["without_step_pass"].update(line)
    return {key: digest.hexdigest() for key, digest in digests.items()}


def _check_log_holds(run: FairRun, step: int, keep, revalidates: bool) -> None:
    """Refuse (:class:`ResumedLogError`) a resume from ``step`` whose log does not hold, among the
    records it keeps, exactly those the checkpoint's run had written (the pass at ``step`` aside
    when the run ``revalidates``), record for record: before anything moves."""
    counts = run.restored_log
    expected = counts["training"] + counts["validation"] - (counts["validation_at_step"] if revalidates else 0)
    kept, digest = 0, hashlib.sha256()
    for record in _records(run.log):
        if keep(record):
            kept += 1
            digest.update((record.to_line() + "\n").encode("utf-8"))
    state = f"global_step_{step}/{STATE_NAME}"
    if kept == expected and digest.hexdigest() != run.restored_digests[
            "without_step_pass" if revalidates else "with_step_pass"]:
        raise ResumedLogError(
            f"{run.log}: the {kept} episode records it keeps from before its checkpoint {state} are not those the "
            f"run had written (their SHA-256 differs): a record was edited, or the log replaced, since; put the log "
            f"back (with its manifest) and resume, or start again from step 0 with trainer.resume_mode=disable "
            f"(what the log holds is set aside, not deleted)")
    if kept != expected:
        raise ResumedLogError(
            f"{run.log}: holds {kept} of the {expected} episode records the run had written when its checkpoint "
            f"{state} was saved ({'missing' if kept < expected else 'more than'} {abs(expected - kept)}): the log "
            f"was deleted, truncated or replaced since, and the passes before the checkpoint cannot be played "
            f"again; put the log back (with its manifest) and resume, or start again from step 0 with "
            f"trainer.resume_mode=disable (what the log holds is set aside, not deleted)")


def begin_run(envs, global_steps: int) -> None:
    """Set aside what the run will write again, now that verl-agent has loaded its checkpoint
    (``global_steps`` N > 0) or found none (0): see the module docstring."""
    run = fair_run(envs)
    if run.log is None:
        return
    if global_steps == 0:
        moved = run.set_aside("restart", keep=lambda record: False)
        if moved is not None or run.manifest["costs"]:  # a new run spends from zero
            side = (moved.path.with_name(moved.path.name.removesuffix(".jsonl") + ".manifest.json") if moved
                    else run.log.with_name(f"{run.log.name}.aside-{next_aside_number(run.log)}.restart.manifest.json"))
            write_atomic(side, json_document(run.manifest))  # its costs, beside the records they bought
            print(f"sokoban-fairness: the costs of the run before this restart are kept in {side.name}; "
                  f"this run's start from zero", flush=True)
            run.manifest["costs"] = {}
            write_atomic(manifest_path(run.log), json_document(run.manifest))
        return
    if run.restored != global_steps:
        raise RuntimeError(f"the trainer resumed at step {global_steps}, but no sokoban-fairness checkpoint state "
                           f"was restored for it (restore_checkpoint_state); apply the whole patch")
    # The pass at the checkpoint's own update finished before the checkpoint was saved; it is
    # played again only when the resumed run validates first (trainer.val_before_train).
    revalidates = run.manifest["settings"]["evaluation.before_training"] is not False
    last_validation_kept = global_steps - 1 if revalidates else global_steps

    def keep(record) -> bool:
        return record.update <= (last_validation_kept if record.phase == "validation" else global_steps)

    _check_log_holds(run, global_steps, keep, revalidates)
    run.set_aside(f"resume-from-{global_steps}", keep=keep)


def end_run(envs) -> None:
    """Record the last step's open training episodes: the run ends without ``close()``."""
    fair_run(envs).training.end_episodes()
