"""A log's validation passes against the schedule its run manifest declares, and its history.

verl-agent validates before training (``evaluation.before_training``), every
``evaluation.frequency`` updates and after the last (``update_budget.total_training_steps``);
a learner that counts env steps declares them in env steps (``update_budget.unit``), and its
passes are checked alike;
a resumed run validates again at the step it resumed from. A pass that is missing or
not on that schedule changes what a learning curve shows without failing any check of
the boards, so ``score`` reports each by update. A manifest whose evaluation settings are
both null (a Gymnasium or GEM learner, VAGEN's evaluator, a single pass) declares no
schedule, and none is checked: a pass can only be missing from a declared schedule.
What happened to the log (resumes, restarts, torn lines set aside) comes from its side files
(:func:`sokoban_tools.records.episodes.side_files`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..records.manifest import BUDGET_UNIT, UPDATES
from ..records.run import OpenRun

_RESUMED = re.compile(r"resume-from-(\d+)")
NO_MANIFEST = "no run manifest beside the log"
NO_SCHEDULE = ("its run manifest declares none (evaluation.before_training and evaluation.frequency are null), "
               "so every pass is scored as logged")


def history(run: OpenRun) -> dict:
    """The resumes (updates, in order), restarts and torn lines the side files of ``run``'s log record."""
    reasons = [reason for _, _, reason in run.side_files]
    return {"resumed_from": [int(m.group(1)) for m in map(_RESUMED.fullmatch, reasons) if m],
            "restarts": reasons.count("restart"), "torn_lines_set_aside": reasons.count("torn-line")}


def declares_schedule(settings: dict) -> bool:
    """Whether a manifest's settings declare a validation schedule: a pass before training
    (true or false) or a frequency; both null declare none."""
    return settings["evaluation.before_training"] is not None or settings["evaluation.frequency"] is not None


def expected_passes(settings: dict, reached: int, resumed_from: list[int]) -> tuple[set[int], set[int]]:
    """The validation updates the schedule requires up to update ``reached``, and those it allows
    besides (a resume's pass; the last update's, when the number of updates is not declared; the
    pass at update 0, when whether one comes before training is not declared)."""
    before, frequency = settings["evaluation.before_training"], settings["evaluation.frequency"]
    total = settings["update_budget.total_training_steps"]
    required = {0} if before else set()
    allowed = set(resumed_from) if before is not False else set()
    if before is None:
        allowed.add(0)
    if frequency is not None and frequency > 0:
        required |= set(range(frequency, reached + 1, frequency))
        if total is not None and reached >= total:
            required.add(total)
        elif total is None:
            allowed.add(reached)
    return required, allowed


def check_schedule(opened: OpenRun, runs: dict[tuple[str, str], tuple[set[int], int | None]]) -> list[dict]:
    """Per (method, run) of the log ``opened``: its validation updates, those missing from or not on the
    schedule of the manifest beside it (``checked`` false, and ``unchecked`` saying why, without
    one or where it declares no schedule), and its history."""
    log, manifest = opened.log, opened.manifest()
    unchecked = (NO_MANIFEST if manifest is None else
                 None if declares_schedule(manifest["settings"]) else NO_SCHEDULE)
    past = history(opened)
    report = []
    for (method, run), (validated, trained) in sorted(runs.items()):
        entry = {"log": str(log), "method": method, "run": run, "validated": sorted(validated),
                 "last_training_update": trained, **past, "checked": unchecked is None, "unchecked": unchecked,
                 "unit": manifest["settings"][BUDGET_UNIT] if manifest is not None else UPDATES}
        if unchecked is None and validated:
            reached = max(trained if trained is not None else 0, max(validated))
            required, allowed = expected_passes(manifest["settings"], reached, past["resumed_from"])
            total = manifest["settings"]["update_budget.total_training_steps"]
            entry.update(missing=sorted(required - validated), unexpected=sorted(validated - required - allowed),
                         total_training_steps=total, stopped_early=total is not None and reached < total)
        report.append(entry)
    return report


def describe(entry: dict) -> str:
    """One line on a run's schedule and history, for the readable report."""
    name = f"{entry['method']} {entry['run']} ({Path(entry['log']).name})"
    at = "update" if entry["unit"] == UPDATES else entry["unit"]  # what the labels count: "at env steps 20000"
    parts = []
    if not entry["checked"]:
        parts.append(f"schedule not checked: {entry['unchecked']}")
    else:
        for key, label in (("missing", "MISSING validation pass at"),
                           ("unexpected", "UNEXPECTED validation pass (not on the manifest's schedule) at")):
            if entry[key]:
                plural = "s" if len(entry[key]) > 1 and at == "update" else ""
                parts.append(f"{label} {at}{plural} {', '.join(map(str, entry[key]))}")
        if entry["stopped_early"]:
            parts.append(f"the log ends at {at} {max(entry['validated'] + [entry['last_training_update'] or 0])} "
                         f"of {entry['total_training_steps']} (stopped, or still running)")
        if not parts:
            parts.append("validation passes as the manifest's schedule declares")
    if entry["resumed_from"]:
        parts.append(f"resumed from update {', '.join(map(str, entry['resumed_from']))}")
    if entry["restarts"]:
        parts.append(f"restarted from update 0 {entry['restarts']} time(s)")
    if entry["torn_lines_set_aside"]:
        parts.append(f"{entry['torn_lines_set_aside']} torn line(s) set aside")
    if entry["resumed_from"] or entry["restarts"] or entry["torn_lines_set_aside"]:
        parts[-1] += " (the records set aside are in the side files beside the log)"
    return f"{name}: " + "; ".join(parts)
