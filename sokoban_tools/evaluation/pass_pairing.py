"""Which validation passes of two methods' runs ``compare`` sets against each other, and why.

A pass is labelled with the point of its run's schedule it was due at: an update, or, for a
learner that counts env steps, a nominal env-step count. A learner trains in whole updates, so
it plays the pass at the first update boundary at or past the label: PPO's pass labelled
100,000 follows its 100,352nd step, and a group method whose updates hold up to 1,920 steps may
play its pass labelled 2,000 after 3,521. Two passes with one label are therefore the same
budget only within an update of each method. The actual count is recorded for a run's last pass
(its manifest's ``training_env_steps`` cost, the steps trained when the budget was reached), is 0
before training, and, in a log that keeps its training episodes, is the label of the training
episodes that follow the pass (a learner counting env steps labels each episode with its count
when its rollout began, and the rollout after a pass begins where the pass was played); for the
passes of a log holding validation alone, the manifest bounds it: at most one update's steps past
the label. ``compare`` pairs two passes when their actual counts, or those bounds, lie within
a stated tolerance of each other, and says when it cannot.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records.budget import ENV_STEPS_COST
from ..records.manifest import BUDGET_UNIT, ENV_STEPS
from ..records.rows import DataError

TOLERANCE = 0.05  # two passes are one budget when their env steps differ by at most this share of the larger


def budget_unit(manifest: dict) -> str:
    """What a run's pass labels count, updates or env steps: its manifest's ``update_budget.unit``."""
    return manifest["settings"][BUDGET_UNIT]


def update_steps(manifest: dict) -> int | None:
    """The most env steps one update of the run can take, from its manifest: a group method's
    groups an update x group size x action horizon; a learner recording its rollout
    (``n_steps`` x ``n_envs``), that; else ``None`` (not recorded)."""
    settings = manifest["settings"]
    groups, size, horizon = (settings.get(key) for key in
                             ("update_budget.groups_per_update", "rollout.group_size", "action_horizon"))
    if groups and size and horizon:
        return groups * size * horizon
    notes = manifest.get("notes")
    learner = notes.get("learner") if isinstance(notes, dict) else None
    hyper = learner.get("hyperparameters") if isinstance(learner, dict) else None
    steps, envs = (hyper.get("n_steps"), hyper.get("n_envs")) if isinstance(hyper, dict) else (None, None)
    return steps * envs if isinstance(steps, int) and isinstance(envs, int) else None


@dataclass(frozen=True)
class PassSteps:
    """Where a pass lies in env steps: exactly (``low == high``) or within ``[low, high]``."""

    low: int
    high: int | None  # None: no bound recorded

    @property
    def exact(self) -> bool:
        return self.high == self.low

    def describe(self) -> str:
        if self.exact:
            return f"{self.low:,}"
        return f"{self.low:,} to {self.high:,}" if self.high is not None else f"{self.low:,} or more"


def measured_steps(records: list) -> dict[tuple[str, str, int], int]:
    """From a log's records in order: the env steps at each (method, run, pass label) that
    training episodes after the pass record, the label of the first one at or past the pass's
    (an episode begun before the pass and ended after it carries a smaller one)."""
    pending: dict[tuple[str, str], set[int]] = {}
    found: dict[tuple[str, str, int], int] = {}
    for record in records:
        run = (record.method, record.run)
        if record.phase == "validation":
            pending.setdefault(run, set()).add(record.update)
            continue
        for label in [label for label in pending.get(run, ()) if record.update >= label]:
            found[(*run, label)] = record.update
            pending[run].discard(label)
    return found


def pass_steps(label: int, runs: list[tuple[dict, int | None]]) -> PassSteps | None:
    """The env steps at the pass labelled ``label`` of ``runs`` (each its manifest and the steps
    measured from its training episodes, or ``None``; several runs: the range over them);
    ``None`` for runs counting updates."""
    if any(budget_unit(manifest) != ENV_STEPS for manifest, _ in runs):
        return None
    bounds = [_bounds(label, manifest, measured) for manifest, measured in runs]
    highs = [high for _, high in bounds]
    return PassSteps(min(low for low, _ in bounds), None if None in highs else max(highs))


def _bounds(label: int, manifest: dict, measured: int | None) -> tuple[int, int | None]:
    """The fewest and the most env steps one run can have trained at its pass labelled ``label``."""
    trained = manifest.get("costs", {}).get(ENV_STEPS_COST, {}).get("value")
    if label == 0:
        return 0, 0
    if measured is not None:
        return measured, measured
    if trained is not None and label == manifest["settings"]["update_budget.total_training_steps"]:
        return int(trained), int(trained)
    update = update_steps(manifest)
    return label, None if update is None else label + update - 1


def gap(a: PassSteps, b: PassSteps) -> int | None:
    """The largest difference in env steps the two passes can have; ``None`` when unbounded."""
    if a.high is None or b.high is None:
        return None
    return max(abs(a.high - b.low), abs(b.high - a.low))


def pair(label_a: int, label_b: int, steps_a: PassSteps | None, steps_b: PassSteps | None, tolerance: float,
         chosen: bool) -> dict:
    """How the pass ``label_a`` of A and ``label_b`` of B are paired, as the report states it;
    :class:`DataError` for passes of one label whose env steps may differ by more than
    ``tolerance`` (unless both were ``chosen`` by the user, when the report states the gap)."""
    entry = {"update_a": label_a, "update_b": label_b,
             "steps_a": None if steps_a is None else steps_a.__dict__,
             "steps_b": None if steps_b is None else steps_b.__dict__, "tolerance": tolerance}
    if steps_a is None or steps_b is None:
        unit = "updates" if steps_a is None and steps_b is None else "mixed"
        entry["paired_by"] = "label" if unit == "updates" else "chosen passes"
        if unit == "mixed" and not chosen:
            raise DataError(f"one side's passes are labelled in updates and the other's in env steps, so label "
                            f"{label_a:,} is not one budget on both; choose the passes to set against each other "
                            f"with --update-a A_PASS --update-b B_PASS")
        entry["note"] = ("passes labelled in updates on both sides" if unit == "updates" else
                         "A and B count their passes in different units; the passes are the ones chosen")
        return entry
    largest = gap(steps_a, steps_b)
    limit = tolerance * max(steps_a.high or steps_a.low, steps_b.high or steps_b.low, 1)
    entry["largest_gap"] = largest
    where = f"A's pass at {steps_a.describe()} env steps, B's at {steps_b.describe()}"
    if largest is not None and largest <= limit:
        entry["paired_by"] = "env steps"
        entry["note"] = (f"{where}: within {tolerance:.0%} of each other" if largest else
                         f"{where}: the same budget")
        return entry
    if chosen:
        entry["paired_by"] = "chosen passes"
        entry["note"] = f"{where}: passes chosen with --update-a/--update-b, different budgets"
        return entry
    why = (f"up to {largest:,} env steps apart" if largest is not None else
           "an unknown number of env steps apart (the manifests record neither the steps at this pass nor an "
           "update's size)")
    raise DataError(f"the passes labelled {label_a:,} may be {why}: {where} (a pass follows the first update "
                    f"boundary at or past its label), more than the {tolerance:.0%} tolerance; compare later "
                    f"passes, widen it with --step-tolerance, or set the two passes against each other with "
                    f"--update-a {label_a} --update-b {label_b}, which the report states")
