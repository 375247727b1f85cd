"""VAGEN's evaluated episodes as our episode log, and its settings as our run manifest.

VAGEN's evaluator dumps every episode as a folder ``<dump_dir>/tag_<tag_id>/<rollout>/``
holding ``metrics.json`` (seed, success, rewards, the reset's and every step's
``info``). :func:`records_from_dump` turns each into one
:class:`sokoban_tools.records.episodes.EpisodeRecord` (``won``: VAGEN's success;
``actions``: the moves it executed, summed from :class:`.env.FairSokoban`'s
``actions_taken``; ``moves``: those moves, joined from its steps' ``moves``;
``return``: VAGEN's cumulative reward), refusing, before anything is
written and naming the rollout's ``metrics.json``, an unfinished or repeated board, a
rollout whose board is not its seed's, or of another ``evaluation.jsonl`` than the one
the environment was given, and any field VAGEN never writes (a ``success`` that is not
true or false, a negative action count). :func:`manifest_from_vagen_config` records
VAGEN's settings under our controlled-settings keys where they mean the same thing and
the rest (turn limit, actions per turn, reply format, reward scheme) under ``notes``,
so ``compare`` against a verl-agent run names every setting that differs.

Standard library only, apart from the config defaults of VAGEN's ``SokobanEnvConfig``,
which :func:`env_config_with_defaults` reads when VAGEN is importable.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ...layout import VALIDATION_DATA
from ...records.boards import load_boards
from ...records.episodes import EpisodeRecord
from ...records.manifest import BUDGET_UNIT, UPDATES, new_manifest
from ...records.rows import BoardRow, DataError

ENV_NAME = "SokobanFairness"
FINISHED = ("done", "max_turns")  # VAGEN's normal finish reasons; others are errors
VISION = "vision"


def env_config_with_defaults(config: dict) -> dict:
    """``config`` (one env spec's ``config``) completed with VAGEN's ``SokobanEnvConfig`` defaults,
    without our ``fairness_*`` keys."""
    from vagen.envs.sokoban.sokoban_env import SokobanEnvConfig

    from .env import FAIRNESS_KEYS

    return asdict(SokobanEnvConfig(**{k: v for k, v in config.items() if k not in FAIRNESS_KEYS}))


def fairness_spec(cfg: dict, name: str = ENV_NAME) -> dict:
    """The one env spec of VAGEN's effective config ``cfg`` that plays ``name``."""
    specs = [spec for spec in cfg.get("envs") or [] if isinstance(spec, dict) and spec.get("name") == name]
    if len(specs) != 1:
        raise ValueError(f"the VAGEN config must have exactly one entry of envs named {name!r}, found "
                         f"{len(specs)}; start from sokoban_tools/integrations/vagen/eval_validation.yaml")
    return specs[0]


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def manifest_from_vagen_config(cfg: dict, method: str, trained: bool = False) -> dict:
    """The run manifest of a VAGEN evaluation with the effective config ``cfg`` (a plain dict,
    interpolations resolved); ``trained``: the model was trained on ``fairness/train.jsonl``."""
    spec = fairness_spec(cfg)
    env = env_config_with_defaults(spec.get("config") or {})
    backend = str((cfg.get("run") or {}).get("backend", "openai")).lower()
    backend_cfg = (cfg.get("backends") or {}).get(backend) or {}
    model = backend_cfg.get("model") or backend_cfg.get("deployment")
    max_turns = int(spec.get("max_turns") or (cfg.get("experiment") or {}).get("default_max_turns") or 10)
    concat = bool(spec.get("concat_multi_turn", True))
    chat = spec.get("chat_config") if "chat_config" in spec else cfg.get("default_chat_config")
    chat = dict(chat or {})
    temperature = _number(chat.get("temperature"))
    settings = {
        "initial_weights.model": model or None,
        "initial_weights.revision": None,
        # VAGEN's vision observation is gym-sokoban's 96x96 image, as verl-agent's rgb_array
        "image_processing.observation": "rgb_array" if env["render_mode"] == VISION else "vagen text grid",
        "image_processing.max_prompt_length": None,
        "image_processing.history_length": max_turns - 1 if concat else 0,
        "action_horizon": max_turns * int(env["max_actions_per_step"]),
        "reward.step": float(env["format_reward"]),
        "reward.box_on_target": 0.0,
        "reward.box_off_target": 0.0,
        "reward.solved": float(env["success_reward"]),
        "reward.invalid_action_penalty": None,
        "reward.invalid_action_penalty_coef": None,
        "rollout.group_size": None,
        "update_budget.groups_per_update": None,
        "update_budget.total_epochs": None,
        "update_budget.total_training_steps": None,
        BUDGET_UNIT: UPDATES,  # VAGEN labels its passes by update, as verl does
        "evaluation.before_training": None,
        "evaluation.frequency": None,
        **{f"decoding.training.{key}": None for key in ("temperature", "top_p", "top_k", "do_sample",
                                                         "response_length", "n")},
        "decoding.validation.temperature": temperature,
        "decoding.validation.top_p": _number(chat.get("top_p")),
        "decoding.validation.top_k": chat.get("top_k"),
        "decoding.validation.do_sample": None if temperature is None else temperature > 0,
        "decoding.validation.response_length": chat.get("max_tokens"),
        "decoding.validation.n": 1,
    }
    notes = {
        "trainer": "VAGEN",
        "vagen": {
            "env": ENV_NAME, "backend": backend, "turn_limit": max_turns,
            "actions_per_turn": int(env["max_actions_per_step"]), "action_sep": env["action_sep"],
            "reply_format": env["prompt_format"], "use_example_in_sys_prompt": env["use_example_in_sys_prompt"],
            "render_mode": env["render_mode"], "concat_multi_turn": concat, "chat_config": chat,
        },
        "reward_scheme": (f"VAGEN's: +{env['format_reward']} (reward.step) for each turn that executed at least "
                          f"one action, +{env['success_reward']} (reward.solved) when the box reaches its target, "
                          f"which ends the episode; gym-sokoban's own rewards are ignored"),
        "action_horizon": "turn_limit x actions_per_turn",
    }
    return new_manifest(method, settings, notes, trained=trained)


def rollout_folders(tag_dir: Path) -> list[Path]:
    """The rollout folders of one VAGEN tag folder, in name order."""
    if not tag_dir.is_dir():
        raise DataError(f"{tag_dir}: no such folder: VAGEN writes each env spec's rollouts to "
                        f"<experiment.dump_dir>/tag_<tag_id>; run the evaluation first")
    return sorted(path for path in tag_dir.iterdir() if path.is_dir())


def _record_of(path: Path, metrics, method: str, run: str, update: int, rerun: str,
               rows: tuple[BoardRow, ...], sha256: str) -> tuple[int, EpisodeRecord]:
    """The board position and the record of one rollout's ``metrics.json``, checked against
    the validation ``rows`` and their file's ``sha256`` (see the module docstring)."""
    if metrics.get("finish_reason") not in FINISHED:
        raise DataError(f"{path}: the episode ended with {metrics.get('finish_reason')!r}, not "
                        f"{' or '.join(FINISHED)}; {rerun}")
    infos = metrics.get("infos") or [{}]
    start = infos[0]
    if start.get("split") != "validation" or "task_id" not in start:
        raise DataError(f"{path}: not an episode of {ENV_NAME}'s validation boards (its reset info has no "
                        f"task_id, or another split); give the tag folder of the {ENV_NAME} env spec")
    edited = "VAGEN never writes that, so the dump was edited or mixes runs; evaluate into a new experiment.dump_dir"
    seed = metrics["seed"]
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < len(rows):
        raise DataError(f"{path}: seed {seed!r} names no validation board (0-{len(rows) - 1}); {edited}")
    if start["board"] != seed or start["task_id"] != rows[seed].task_id:
        raise DataError(f"{path}: seed {seed} plays board {rows[seed].task_id} (position {seed}), but the "
                        f"rollout names {start['task_id']!r} at position {start['board']!r}; {edited}")
    if start["file_sha256"] != sha256:
        raise DataError(f"{path}: played an evaluation.jsonl of SHA-256 {str(start['file_sha256'])[:12]}..., "
                        f"not this one ({sha256[:12]}...): a dump of another board set is never logged; "
                        f"evaluate these boards into a new experiment.dump_dir")
    if not isinstance(metrics["success"], bool):
        raise DataError(f"{path}: success is {metrics['success']!r}, not true or false; {edited}")
    taken = [info.get("actions_taken", 0) for info in infos[1:]]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in taken):
        raise DataError(f"{path}: actions_taken of the steps are {taken}, not counts (non-negative whole numbers); "
                        f"{edited}")
    steps = [info.get("moves") for info in infos[1:]]
    moves = None if None in steps else "".join(map(str, steps))  # a dump of an older FairSokoban: unverified
    try:
        record = EpisodeRecord(method, run, "validation", update, start["task_id"], metrics["success"], sum(taken),
                               float(metrics["cumulative_reward"]), start["file_sha256"], moves)
    except ValueError as err:  # a field the log refuses (a return that is not finite, ...)
        raise DataError(f"{path}: {err}; {edited}") from None
    return seed, record


def records_from_dump(tag_dir: Path | str, method: str, run: str, update: int = 0,
                      dataset_dir: str | None = None, revision: str | None = None) -> list[EpisodeRecord]:
    """One validation record per rollout of ``tag_dir``, in board order; refuses a rollout without
    metrics, one that ended in an error, one not of :class:`.env.FairSokoban`'s validation boards
    (read from ``dataset_dir`` or the Hub ``revision``, as the env spec's ``fairness_boards`` and
    ``fairness_revision`` say), and a board played twice (see the module docstring)."""
    tag_dir = Path(tag_dir)
    rows, sha256 = load_boards(VALIDATION_DATA, dataset_dir, revision)
    rows = tuple(rows)
    rerun = "run VAGEN again with run.resume=skip_completed into the same experiment.dump_dir to finish it"
    by_board: dict[int, tuple[Path, EpisodeRecord]] = {}
    for folder in rollout_folders(tag_dir):
        path = folder / "metrics.json"
        if not path.is_file():
            raise DataError(f"{path}: missing (an interrupted episode); {rerun}")
        try:
            metrics = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as err:  # VAGEN's resume neither removes nor replays a folder whose metrics do not read
            raise DataError(f"{path}: not JSON ({err}), a write cut short; remove the folder {folder} and "
                            f"{rerun}") from None
        try:
            board, record = _record_of(path, metrics, method, run, update, rerun, rows, sha256)
        except (KeyError, TypeError, AttributeError) as err:  # ValueError: our own refusals, kept as they are
            raise DataError(f"{path}: not the metrics VAGEN writes for an episode (missing or wrong {err}); "
                            f"{rerun}") from None
        if board in by_board:
            raise DataError(f"{path}: board {record.task_id} was played already, in {by_board[board][0]}: "
                            f"the folder holds more than one pass; give each run its own experiment.dump_dir "
                            f"(run.resume=off keeps earlier rollouts)")
        by_board[board] = (folder, record)
    return [record for _, (_, record) in sorted(by_board.items())]

