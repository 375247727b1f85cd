"""The run manifest: a run's controlled settings, the data it used and what it cost, beside its episode log.

Identical boards make a comparison fair only if everything a method does not
own is matched too: the spec names initial weights, image processing, action
horizon, reward, rollout group size, update budget and decoding. A run records
them once, as a JSON file beside its episode log (:func:`manifest_path`), so
``compare`` checks them before the numbers. :data:`SETTINGS` is the one
definition of the controlled settings: what each means, its type, and where it
comes from in verl-agent's composed Hydra config. From it
:func:`manifest_from_verl_config` fills a manifest with the patched verl-agent,
:func:`check_manifest` validates one written by hand for another trainer, and
the card's checklist and schema table are generated.

A manifest is a JSON object with exactly these keys (any order):

=================  ============================================================
``format``         :data:`FORMAT`
``protocol``       the evaluation protocol, ``sokoban-eval-256-v1``
``release``        the dataset release whose files the run used (as recorded;
                   the digests decide)
``data_sha256``    ``{"fairness/train.jsonl": SHA-256, "fairness/evaluation.jsonl":
                   SHA-256}``: must be the published files' digests; the
                   training file's is null for a run that trained on no boards
``method``         the method, free text (it may differ between compared runs)
``settings``       every key of :data:`SETTINGS`; a value of the stated type, or
                   null where the setting does not apply (a scripted policy
                   has no decoding); ``update_budget.unit`` is never null, and a
                   manifest written before it existed reads with it filled
                   (:func:`with_budget_unit`)
``costs``          ``{name: {"unit": str, "value": number >= 0}}``: what the run
                   spent, per named entry (``gen``, ``update_actor``, a
                   method's extra scoring...), never mixed into success
``boards``         optional: where the run read the boards, ``{"folder": path}``
                   (a local copy of the dataset repository) or
                   ``{"hub_repo": id, "hub_revision": revision}``; ``score``
                   and ``compare`` read the validation boards from there
``tuning``         optional, only in a tuning run's manifest (``train --tuning``):
                   ``{"protocol": "sokoban-tuning-256-v1", "selection": file,
                   "validation_boards": 256, "validation_boards_sha256": SHA-256,
                   "note": text}``; the run validated on the tuning split, so
                   ``score``, ``compare`` and ``leaderboard`` refuse its log
``notes``          optional, free-form
=================  ============================================================

Standard library only.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from sokoban_published import PUBLISHED_FILES, RELEASE

from ..checks import integer
from ..files import json_document, write_atomic
from ..layout import TRAIN_DATA, VALIDATION_DATA
from ..paths import read_bounded
from ..protocol import (BOX_OFF_TARGET_PENALTY, BOX_ON_TARGET_REWARD, PROTOCOL, STEP_PENALTY, VALIDATION_SIZE,
                        WIN_REWARD)
from .rows import DataError
from .tuning_split import TUNING_PROTOCOL, is_tuning_record, tuning_record
from . import strict_json

FORMAT = "sokoban-fairness run manifest 1"
SUFFIX = ".manifest.json"  # appended to the episode log's name
MAX_BYTES = 1 << 20
DATA_FILES = (TRAIN_DATA, VALIDATION_DATA)
KEYS = ("format", "protocol", "release", "data_sha256", "method", "settings", "costs")
NOTES = "notes"
BOARDS = "boards"
QUICK_LOOK = "a quick look, NOT the protocol"  # ends notes.boards of a run that validated on the first boards only
TUNING = "tuning"  # a tuning run's entry (sokoban_tools.records.tuning_split.tuning_record)
BOARD_SOURCES = ({"folder"}, {"hub_repo", "hub_revision"})  # the key sets a boards entry may have
ENVIRONMENT = "the environment"  # the source of settings that sokoban_tools.runtime.env defines
UPDATES, ENV_STEPS = UNITS = ("updates", "env steps")  # what a run's budget, schedule and update labels count
BUDGET_UNIT = "update_budget.unit"
VERL_AGENT_UNIT = "verl-agent's schedule"  # the source of BUDGET_UNIT in verl-agent: it always counts updates
RUN_KEYS = ("method", "settings")  # what makes two manifests one run's (notes and costs may differ)
KINDS = {"integer": (int,), "number": (int, float), "boolean": (bool,), "string": (str,)}


class ManifestError(DataError):
    """A manifest that is malformed, incomplete, of other data, or at odds with another."""


@dataclass(frozen=True)
class Setting:
    """A controlled setting: its manifest key, JSON type, meaning and verl-agent config key."""

    key: str
    kind: str  # a key of KINDS
    meaning: str
    verl_agent: str  # a dotted key of the composed config, ENVIRONMENT, or VERL_AGENT_UNIT
    optional: bool = False  # absent from verl-agent's config unless the launcher adds it: null then
    choices: tuple[str, ...] = ()  # where given, the only values allowed (and never null)

    @property
    def group(self) -> str:
        return GROUP_OF[self.key.rsplit(".", 1)[0] if "." in self.key else self.key]


# The groups the spec names, in its order: (key prefix, title).
GROUPS = (
    ("initial_weights", "Initial weights"),
    ("image_processing", "Image processing"),
    ("action_horizon", "Action horizon"),
    ("reward", "Reward"),
    ("rollout", "Rollout group size"),
    ("update_budget", "Update budget"),
    ("evaluation", "Evaluation schedule"),
    ("decoding.training", "Decoding in training"),
    ("decoding.validation", "Decoding in validation"),
)
GROUP_OF = dict(GROUPS)
_ROLLOUT = "actor_rollout_ref.rollout"


def _decoding(phase: str, config: str) -> tuple[Setting, ...]:
    return (
        Setting(f"decoding.{phase}.temperature", "number", "sampling temperature", f"{config}.temperature"),
        Setting(f"decoding.{phase}.top_p", "number", "nucleus sampling mass", f"{config}.top_p"),
        Setting(f"decoding.{phase}.top_k", "integer", "top-k sampling (-1: off)", f"{config}.top_k"),
        Setting(f"decoding.{phase}.do_sample", "boolean", "sample (false: greedy)", f"{config}.do_sample"),
        Setting(f"decoding.{phase}.response_length", "integer", "tokens an answer may have",
                f"{_ROLLOUT}.response_length"),
        Setting(f"decoding.{phase}.n", "integer", "answers sampled per prompt", f"{config}.n"),
    )


SETTINGS: tuple[Setting, ...] = (
    Setting("initial_weights.model", "string", "the model the policy starts from: a Hub id or a path",
            "actor_rollout_ref.model.path"),
    Setting("initial_weights.revision", "string", "its revision (commit) or digest, where the launcher sets one",
            "actor_rollout_ref.model.revision", optional=True),
    Setting("image_processing.observation", "string",
            "what the environment shows each turn (rgb_array: the 96×96 game image; tiny_rgb_array: a text grid)",
            "env.sokoban.mode"),
    Setting("image_processing.max_prompt_length", "integer", "tokens of a prompt, image tokens included",
            "data.max_prompt_length"),
    Setting("image_processing.history_length", "integer", "earlier turns each prompt shows", "env.history_length"),
    Setting("action_horizon", "integer", "actions an episode may take", "env.max_steps"),
    Setting("reward.step", "number", "reward of every turn", ENVIRONMENT),
    Setting("reward.box_on_target", "number", "reward when the box reaches its target", ENVIRONMENT),
    Setting("reward.box_off_target", "number", "reward when the box leaves its target", ENVIRONMENT),
    Setting("reward.solved", "number", "reward when the board is solved", ENVIRONMENT),
    Setting("reward.invalid_action_penalty", "boolean", "the trainer penalises an unparseable answer",
            "actor_rollout_ref.actor.use_invalid_action_penalty"),
    Setting("reward.invalid_action_penalty_coef", "number", "that penalty",
            "actor_rollout_ref.actor.invalid_action_penalty_coef"),
    Setting("rollout.group_size", "integer", "episodes per training board in a group", "env.rollout.n"),
    Setting("update_budget.groups_per_update", "integer", "training boards (groups) per update",
            "data.train_batch_size"),
    Setting("update_budget.total_epochs", "integer", "passes over the training batches", "trainer.total_epochs"),
    Setting("update_budget.total_training_steps", "integer",
            "the budget, in update_budget.unit, when set (else total_epochs × batches per epoch)",
            "trainer.total_training_steps"),
    Setting(BUDGET_UNIT, "string", 'what the budget, evaluation.frequency and every record\'s update count: '
            '"updates" or "env steps"', VERL_AGENT_UNIT, choices=UNITS),
    Setting("evaluation.before_training", "boolean", "a validation pass at update 0", "trainer.val_before_train"),
    Setting("evaluation.frequency", "integer", "a validation pass every this many updates (or env steps), and "
            "after the last", "trainer.test_freq"),
    *_decoding("training", _ROLLOUT),
    *_decoding("validation", f"{_ROLLOUT}.val_kwargs"),
)
SETTING = {setting.key: setting for setting in SETTINGS}


def environment_settings() -> dict[str, float]:
    """The reward settings the runtime environment itself defines."""
    return {"reward.step": STEP_PENALTY, "reward.box_on_target": BOX_ON_TARGET_REWARD,
            "reward.box_off_target": BOX_OFF_TARGET_PENALTY, "reward.solved": WIN_REWARD}


def manifest_path(log: Path | str) -> Path:
    """Where the manifest of the episode log ``log`` lives: ``<log>.manifest.json``."""
    log = Path(log)
    return log.with_name(log.name + SUFFIX)


def new_manifest(method: str, settings: Mapping[str, object], notes=None, trained: bool = True,
                 boards: dict | None = None, tuning: dict | None = None) -> dict:
    """A checked manifest of the current release's files (the training file's
    digest null unless ``trained``), with no costs yet; ``boards``, where they were read;
    ``tuning``, a tuning run's entry."""
    missing = [key for key in SETTING if key not in settings]
    unknown = [key for key in settings if key not in SETTING]
    if missing or unknown:
        raise ManifestError(f"settings: missing {missing}, unknown {unknown}; give every key of SETTINGS")
    manifest = {
        "format": FORMAT,
        "protocol": PROTOCOL,
        "release": RELEASE,
        "data_sha256": {name: PUBLISHED_FILES[name]["sha256"] if trained or name != TRAIN_DATA else None
                        for name in DATA_FILES},
        "method": method,
        "settings": {setting.key: settings[setting.key] for setting in SETTINGS},
        "costs": {},
    }
    if boards is not None:
        manifest[BOARDS] = boards
    if tuning is not None:
        manifest[TUNING] = tuning
    if notes is not None:
        manifest[NOTES] = notes
    return check_manifest(manifest, "the new manifest")


def _lookup(config, dotted: str, optional: bool):
    """``config.a.b`` of a DictConfig or nested dict (interpolations resolved on access)."""
    node = config
    for part in dotted.split("."):
        try:
            node = node[part]
        except (KeyError, TypeError, AttributeError):  # a DictConfig raises its own KeyError subclass
            if optional:
                return None
            raise ManifestError(f"the verl-agent config has no {dotted}; compose it from verl-agent's "
                                f"ppo_trainer.yaml") from None
    return node


def manifest_from_verl_config(config, method: str | None = None, notes=None, boards: dict | None = None) -> dict:
    """The manifest of a run launched with verl-agent's composed Hydra ``config``
    (a DictConfig or a plain nested dict); ``method`` defaults to the config's
    ``algorithm.adv_estimator``."""
    values = {**environment_settings(), BUDGET_UNIT: UPDATES}
    for setting in SETTINGS:
        if setting.verl_agent not in (ENVIRONMENT, VERL_AGENT_UNIT):
            value = _lookup(config, setting.verl_agent, setting.optional)
            if setting.kind == "number" and isinstance(value, int) and not isinstance(value, bool) and finite(value):
                value = float(value)  # YAML's 1 and 1.0 are the same setting (a huge one is refused below)
            values[setting.key] = value
    if method is None:
        method = str(_lookup(config, "algorithm.adv_estimator", False))
    return new_manifest(method, values, notes, boards=boards)


def finite(value) -> bool:
    """A number a float can hold exactly enough: not inf or nan, and no int beyond a float's range
    (which ``float()`` and ``math.isfinite`` meet with an ``OverflowError``)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _problem(value, setting: Setting) -> str | None:
    kind = setting.kind
    if setting.choices and value not in setting.choices:
        return f"must be {' or '.join(json.dumps(choice) for choice in setting.choices)}, got {json.dumps(value)}"
    if value is None:
        return None
    if isinstance(value, bool) != (kind == "boolean") or not isinstance(value, KINDS[kind]):
        return f"must be {'an' if kind[0] in 'aeiou' else 'a'} {kind} or null, got {value!r}"
    if kind == "number" and not finite(value):
        return f"must be a finite number (within a float's range), got {value!r}"
    if kind == "string" and not value:
        return "must be a non-empty string or null"
    return None


def _object(value, where: str, source: str) -> dict:
    if not isinstance(value, dict):
        raise ManifestError(f"{source}: {where} must be a JSON object, got {value!r}")
    return value


def check_manifest(manifest, source: str) -> dict:
    """``manifest`` if it is complete, well typed and of the published files;
    else :class:`ManifestError` naming ``source`` and the key."""
    fix = "see the manifest schema in sokoban_tools.records.manifest (tabled in the card)"
    manifest = _object(manifest, "the manifest", source)
    unknown = [key for key in manifest if key not in KEYS and key not in (NOTES, BOARDS, TUNING)]
    if unknown:
        raise ManifestError(f"{source}: unknown key {unknown[0]!r} (free-form text goes under {NOTES!r}); {fix}")
    missing = [key for key in KEYS if key not in manifest]
    if missing:
        raise ManifestError(f"{source}: missing key {missing[0]!r}; {fix}")
    for key, expected in (("format", FORMAT), ("protocol", PROTOCOL)):
        if manifest[key] != expected:
            raise ManifestError(f"{source}: {key} is {manifest[key]!r}, expected {expected!r}; {fix}")
    if not isinstance(manifest["release"], str) or not manifest["release"]:  # the digests below decide
        raise ManifestError(f"{source}: release must be a non-empty string, got {manifest['release']!r}; {fix}")
    digests = _object(manifest["data_sha256"], "data_sha256", source)
    for name in digests:
        if name not in DATA_FILES:
            raise ManifestError(f"{source}: data_sha256: unknown key {name!r}; it names {', '.join(DATA_FILES)}")
    for name in DATA_FILES:
        published = PUBLISHED_FILES[name]["sha256"]
        if name == TRAIN_DATA and name in digests and digests[name] is None:
            continue  # a run that trained on no boards, such as a scripted policy
        if digests.get(name) != published:
            raise ManifestError(f"{source}: data_sha256.{name} is {digests.get(name)!r}, not the published "
                                f"file's {published} (release {RELEASE}): the run used other boards, which "
                                f"cannot be compared; train and validate on the published files")
    if not isinstance(manifest["method"], str) or not manifest["method"]:
        raise ManifestError(f"{source}: method must be a non-empty string, got {manifest['method']!r}")
    settings = _object(manifest["settings"], "settings", source)
    for key in settings:
        if key not in SETTING:
            raise ManifestError(f"{source}: settings: unknown key {key!r} (free-form text goes under "
                                f"{NOTES!r}); {fix}")
    for setting in SETTINGS:
        if setting.key not in settings:
            raise ManifestError(f"{source}: settings: missing key {setting.key!r} ({setting.meaning}; "
                                f"null if it does not apply); {fix}")
        problem = _problem(settings[setting.key], setting)
        if problem:
            raise ManifestError(f"{source}: settings.{setting.key} {problem}; {fix}")
    for name, entry in _object(manifest["costs"], "costs", source).items():
        check_cost(name, entry, source)
    if BOARDS in manifest:
        boards = _object(manifest[BOARDS], BOARDS, source)
        if set(boards) not in BOARD_SOURCES or not all(isinstance(v, str) and v for v in boards.values()):
            raise ManifestError(f"{source}: boards must be {{\"folder\": path}} or {{\"hub_repo\": id, "
                                f"\"hub_revision\": revision}}, non-empty strings, got {boards!r}; {fix}")
    if TUNING in manifest and not is_tuning_record(manifest[TUNING]):
        raise ManifestError(f"{source}: tuning must be the entry `train --tuning` writes, with the keys "
                            f"{', '.join(tuning_record(''))} and protocol {TUNING_PROTOCOL!r}, got "
                            f"{manifest[TUNING]!r}; {fix}")
    return manifest


def check_cost(name, entry, source: str) -> None:
    """Refuse a cost entry that is not ``{"unit": str, "value": number >= 0}``."""
    where = f"{source}: costs.{name}"
    if not name:
        raise ManifestError(f"{where}: a cost entry needs a name (e.g. gen, update_actor, teacher_scoring)")
    if not isinstance(entry, dict) or set(entry) != {"unit", "value"}:
        raise ManifestError(f"{where} must be an object with exactly the keys unit and value, got {entry!r}")
    if not isinstance(entry["unit"], str) or not entry["unit"]:
        raise ManifestError(f"{where}.unit must name the unit (e.g. GPU-seconds, tokens), got {entry['unit']!r}")
    value = entry["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not finite(value) or value < 0:
        raise ManifestError(f"{where}.value must be a finite number >= 0, got {value!r}")


def read_manifest(path: Path | str) -> dict:
    """The checked manifest at ``path``."""
    return parse_manifest(read_manifest_bytes(path), path)


def read_manifest_bytes(path: Path | str) -> bytes:
    """The bytes of the manifest file at ``path``, refused when it is no regular file or too large."""
    return read_bounded(path, MAX_BYTES, "run manifest")


def parse_manifest(data: bytes, path: Path | str) -> dict:
    """The checked manifest that ``data``, read from ``path``, holds (an older one with the
    settings it lacks filled, :func:`with_budget_unit`)."""
    try:
        manifest = strict_json.loads(data.decode("utf-8"))
    except ValueError as err:  # UnicodeDecodeError included
        raise ManifestError(f"{path}: is not a JSON object ({err}); write it again") from None
    return check_manifest(with_budget_unit(manifest), str(path))


def with_budget_unit(manifest):
    """``manifest`` as read from a file; one written before :data:`BUDGET_UNIT` existed gains it, as
    readers used to infer it: env steps where its notes' ``schedule`` says so (as every learner
    counting env steps wrote it), else updates. Its other settings keep their order, the unit
    takes its place among them, and the file is not touched: an older manifest and a new one of
    the same run read as the same settings."""
    settings = manifest.get("settings") if isinstance(manifest, dict) else None
    if not isinstance(settings, dict) or BUDGET_UNIT in settings:
        return manifest
    notes = manifest.get(NOTES)
    schedule = notes.get("schedule") if isinstance(notes, dict) else None
    unit = ENV_STEPS if isinstance(schedule, str) and ENV_STEPS in schedule else UPDATES
    filled = {**settings, BUDGET_UNIT: unit}
    ordered = {key: filled[key] for key in SETTING if key in filled}  # unknown keys last, for the check to name
    return {**manifest, "settings": {**ordered, **filled}}


def write_manifest(log: Path | str, manifest: dict) -> Path:
    """Write ``manifest`` beside the episode log ``log`` (:func:`keep_manifest`); its path."""
    keep_manifest(log, manifest)
    return manifest_path(log)


def keep_manifest(log: Path | str, manifest: dict) -> dict:
    """Write ``manifest`` beside the episode log ``log``, once per run: a manifest
    already there is kept (with its costs) if it records the same method and
    settings, refused if it does not, since the log would mix runs of other settings.
    Beside a log that holds no record yet (a run that stopped before its first), another
    run's manifest describes nothing and is replaced, so the corrected run can start.
    Returns the manifest beside the log now, read once: the one kept, or ``manifest``."""
    try:
        kept = _this_runs(log, manifest)
    except ManifestError:
        if os.path.isfile(log) and os.path.getsize(log) > 0:
            raise
        kept = None  # another run's (or an unreadable) manifest beside no record: it describes nothing
    if kept is None:
        write_atomic(manifest_path(log), json_document(manifest))
        kept = manifest
    return kept


def boards_note(played: int, how: str = "") -> str:
    """A served or TRL run's ``notes.boards``: all validation boards, the protocol, or the first
    ``played`` of them (``how``: the option that cut them), a quick look, which ``score`` reads
    only when asked (``--quick-look``) and ``compare`` and the leaderboard never."""
    if played >= VALIDATION_SIZE:
        return f"all {VALIDATION_SIZE} validation boards (the protocol)"
    return f"the first {played} of the {VALIDATION_SIZE} validation boards{how}: {QUICK_LOOK}"


def declares_quick_look(manifest: dict | None) -> bool:
    """Whether ``manifest`` is of a run that validated on the first boards only (:func:`boards_note`)."""
    notes = manifest.get(NOTES) if manifest is not None else None
    return isinstance(notes, dict) and str(notes.get(BOARDS, "")).endswith(QUICK_LOOK)


def same_run(a: dict, b: dict) -> bool:
    """Whether the manifests ``a`` and ``b`` are of one run: the same method and settings, and
    no learner hyperparameters that differ (:func:`other_hyperparameters`)."""
    return all(a[key] == b[key] for key in RUN_KEYS) and not other_hyperparameters(a, b)


def other_hyperparameters(a: dict, b: dict) -> list[str]:
    """The learner hyperparameters that differ between the manifests ``a`` and ``b`` where both
    record them (``notes.learner.hyperparameters``, as ``train`` writes them): a run of another
    recipe (``train --config``) has the same controlled settings, so only these tell it apart."""
    recorded = [_hyperparameters(manifest) for manifest in (a, b)]
    if None in recorded:
        return []
    old, new = recorded
    return sorted(key for key in {*old, *new} if old.get(key) != new.get(key))


def _hyperparameters(manifest: dict) -> dict | None:
    """``notes.learner.hyperparameters`` as JSON holds them, or None where the notes have none."""
    found = manifest.get(NOTES)
    for key in ("learner", "hyperparameters"):
        found = found.get(key) if isinstance(found, dict) else None
    return json.loads(json.dumps(found)) if isinstance(found, dict) else None


def check_fits(log: Path | str, manifest: dict, torn_ok: bool = False) -> bool:
    """Whether the manifest beside ``log`` is already ``manifest``'s run (same method and
    settings); :class:`ManifestError` if it is another run's. Writes nothing. With
    ``torn_ok``, a manifest that does not read (half-written) is no run's: False, for a
    caller that sets it aside before writing (the patched trainer at start)."""
    return _this_runs(log, manifest, torn_ok) is not None


def _this_runs(log: Path | str, manifest: dict, torn_ok: bool = False) -> dict | None:
    """The manifest beside ``log`` when it is ``manifest``'s run, ``None`` when there is none
    (or, with ``torn_ok``, one that does not read); see :func:`check_fits`."""
    path = manifest_path(log)
    check_manifest(manifest, "the new manifest")
    if not path.exists():
        return None
    try:
        old = read_manifest(path)
    except ManifestError:
        if torn_ok:
            return None
        raise
    if old.get(TUNING) != manifest.get(TUNING):
        kinds = ["a validation run", "a tuning run (train --tuning)"]
        raise ManifestError(f"{path}: holds the manifest of {kinds[TUNING in old]}, and {log} would mix it with "
                            f"{kinds[TUNING in manifest]}, which play different boards; give this run its own "
                            f"episode log")
    changed = [key for key in RUN_KEYS if old[key] != manifest[key]]
    if changed:
        keys = [key for key in SETTING if old["settings"][key] != manifest["settings"][key]]
        raise ManifestError(f"{path}: holds the manifest of a run with another {changed[0]} "
                            f"({', '.join(keys) or old['method']}), and {log} would mix both runs; "
                            f"give this run its own episode log")
    differing = other_hyperparameters(old, manifest)
    if differing:
        raise ManifestError(f"{path}: records a run with other hyperparameters ({', '.join(differing)}: another "
                            f"--config, or none), and {log} would mix both runs; give this run its own episode "
                            f"log (train's --log)")
    return old


WHOLE_STEP = "step"  # verl's timer around a whole training step, which its other timers are parts of
STEP_REST = "step_other"  # the part of a step that no other timer covers


def costs_from_verl_metrics(metrics: Mapping[str, object], gpus: int) -> dict[str, tuple[str, float]]:
    """The cost entries of one verl training step: each ``timing_s/NAME`` as
    ``NAME`` in GPU-seconds (its wall-clock seconds times the run's ``gpus``,
    which the trainer holds through every phase), and ``perf/total_num_tokens``
    as ``tokens``. A method's extra phase (a teacher's scoring) is timed under
    its own name and so becomes its own entry. verl's ``timing_s/step`` times the
    whole step, which contains the others (``gen``, ``update_actor``, ``testing``...),
    so it is kept only as :data:`STEP_REST`, the rest of the step no part times:
    the entries are disjoint and add up to what the run spent. Every value is
    checked (a finite number >= 0) before anything is returned."""
    gpus = integer("gpus", gpus, 1)
    if not isinstance(metrics, Mapping):
        raise TypeError(f"metrics must be the trainer's metrics of one step (a mapping of names to numbers), "
                        f"got {type(metrics).__name__}")
    entries, step = {}, None
    for key, value in metrics.items():
        if not (isinstance(key, str) and (key.startswith("timing_s/") or key == "perf/total_num_tokens")):
            continue
        try:
            amount = float(value)
        except (TypeError, ValueError, OverflowError):
            amount = math.nan
        if isinstance(value, bool) or not math.isfinite(amount) or amount < 0:
            raise ValueError(f"metrics {key} must be a finite number >= 0 (a time or a count), got {value!r}")
        if key == "perf/total_num_tokens":
            entries["tokens"] = ("tokens", amount)
        elif key == f"timing_s/{WHOLE_STEP}":
            step = amount * gpus
        else:
            entries[key.removeprefix("timing_s/")] = ("GPU-seconds", amount * gpus)
    if step is not None:
        parts = sum(amount for unit, amount in entries.values() if unit == "GPU-seconds")
        entries[STEP_REST] = ("GPU-seconds", max(step - parts, 0.0))
    return entries


def merge_costs(manifest: dict, entries: Mapping[str, tuple[str, float]], source: str) -> dict:
    """``manifest`` with ``entries`` (name: (unit, amount)) added to its costs;
    an entry already kept in another unit is refused."""
    costs = manifest["costs"]
    for name, (unit, amount) in entries.items():
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not finite(amount) or amount < 0:
            raise ManifestError(f"{source}: costs.{name}: an amount spent must be a finite number >= 0, got "
                                f"{amount!r}; a cost never goes down")
        entry = costs.setdefault(name, {"unit": unit, "value": 0})
        if entry["unit"] != unit:
            raise ManifestError(f"{source}: costs.{name} is in {entry['unit']}, not {unit}; name the entry "
                                f"of another unit differently")
        entry["value"] += amount
        check_cost(name, entry, source)
    return manifest


def add_costs(log: Path | str, entries: Mapping[str, tuple[str, float]]) -> dict:
    """Add ``entries`` (name: (unit, amount)) to the costs of the manifest beside
    ``log`` and write it again (atomically); returns the manifest."""
    path = manifest_path(log)
    manifest = merge_costs(read_manifest(path), entries, str(path))
    write_atomic(path, json_document(manifest))
    return manifest


def _distinct(values) -> list:
    out = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


def setting_differences(a: list[dict], b: list[dict]) -> list[dict]:
    """Every controlled setting not the same in all manifests ``a`` and ``b``:
    its key and the distinct values on each side."""
    differences = []
    for setting in SETTINGS:
        a_values = _distinct(manifest["settings"][setting.key] for manifest in a)
        b_values = _distinct(manifest["settings"][setting.key] for manifest in b)
        if len(_distinct(a_values + b_values)) > 1:
            differences.append({"key": setting.key, "a": a_values, "b": b_values})
    return differences


def total_costs(manifests: dict[str, dict]) -> dict[str, dict]:
    """Each cost entry summed over ``manifests`` (path: manifest), refused when
    two of them state it in different units."""
    totals: dict[str, dict] = {}
    for path, manifest in manifests.items():
        for name, entry in manifest["costs"].items():
            total = totals.setdefault(name, {"unit": entry["unit"], "total": 0, "first": path})
            if total["unit"] != entry["unit"]:
                raise ManifestError(f"{path}: costs.{name} is in {entry['unit']} but in {total['unit']} in "
                                    f"{total['first']}; state one entry in one unit")
            total["total"] += entry["value"]
    return {name: {"unit": t["unit"], "total": t["total"]} for name, t in totals.items()}
