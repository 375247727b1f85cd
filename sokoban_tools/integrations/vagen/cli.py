"""``python -m sokoban_tools vagen``: VAGEN's evaluator on the stored boards, logged for ``score``.

    python -m sokoban_tools vagen evaluate --episode-log LOG [--config CFG] [VAGEN overrides ...]
    python -m sokoban_tools vagen log      --episode-log LOG [--config CFG] [VAGEN overrides ...]

``evaluate`` registers :class:`.env.FairSokoban` with VAGEN's evaluator and runs VAGEN's own
``vagen.evaluate.run_eval`` with the config (default: the shipped ``eval_validation.yaml``) and
the OmegaConf overrides (``backends.openai.model=...``, ``experiment.dump_dir=...``), then
appends one record per evaluated board to LOG and writes the run manifest beside it. ``log``
does only the second half, for an evaluation run earlier with VAGEN's own command. The
manifest is written, and the log checked, before VAGEN starts.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

from ...files import json_document, write_atomic
from ...help_text import Parser
from ...paths import error_text
from ...protocol import VALIDATION_SIZE
from ...records import strict_json
from ...records.episodes import episode_writer, read_episodes
from ...records.rows import DataError
from . import EVAL_CONFIG, register
from ..served.client import public_url
from .quiet import quietly, redacted
from .rollouts import fairness_spec, manifest_from_vagen_config, records_from_dump

NO_VAGEN = ("VAGEN is not importable ({}): put the folder holding vagen/ (a VAGEN clone, or a copy of its files) "
            "on PYTHONPATH, e.g. export PYTHONPATH=$HOME/VAGEN (docs/vagen.md)")


def effective_config(config: Path, overrides: list[str]) -> tuple[dict, Path]:
    """VAGEN's effective config (``defaults:`` merged, overrides applied, interpolations and
    relative paths resolved, as ``run_eval`` resolves them) and its dump folder."""
    from omegaconf import OmegaConf
    from vagen.evaluate.run_eval import _load_config, _resolve_dump_dir, _resolve_paths_in_config

    base_dir = os.path.dirname(os.path.abspath(config))
    cfg = OmegaConf.to_container(_load_config(str(config), overrides), resolve=True)
    cfg = _resolve_paths_in_config(cfg, base_dir)
    return cfg, Path(_resolve_dump_dir(cfg, base_dir))


RUN_OUTPUT = "sokoban_fairness_vagen_output.txt"  # in the dump folder: what VAGEN printed, unless --verbose
OWNER = "sokoban_fairness_owner.json"  # in the tag folder: the backend and model whose rollouts it holds


def claim_dump(tag_dir: Path, cfg: dict, backend: str, evaluating: bool) -> None:
    """Refuse a dump folder that holds another model's rollouts: VAGEN's ``skip_completed``
    resume skips an (env, seed, tag) done by any model, so a second model evaluated into the
    same folder would be logged with the first one's episodes. ``evaluate`` claims the folder.
    The owner is the backend and the model; the server's URL is recorded, not compared (the
    same model served again on another port resumes, as ``evaluate --resume`` does)."""
    settings = (cfg.get("backends") or {}).get(backend) or {}
    url = settings.get("base_url")
    owner = {"backend": backend, "model": settings.get("model"), "base_url": public_url(url) if url else url}
    path = tag_dir / OWNER
    if path.is_file():
        found = strict_json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(found, dict) or [found.get(key) for key in ("backend", "model")] != \
                [owner["backend"], owner["model"]]:
            raise DataError(f"{tag_dir}: holds the rollouts of {found}, not of {owner}: VAGEN would skip the boards "
                            f"they played; give this evaluation its own experiment.dump_dir")
    if evaluating:
        write_atomic(path, json_document(owner))


def key_override(cfg: dict, backend: str) -> list[str]:
    """The override a key-less run needs: VAGEN's OpenAI client refuses to start without a key
    (``Missing credentials``) even for a server of your own, which takes any; with no
    ``base_url`` it calls OpenAI's API, which needs a real one."""
    settings = (cfg.get("backends") or {}).get(backend) or {}
    if backend != "openai" or settings.get("api_key") or os.environ.get("OPENAI_API_KEY"):
        return []
    if not settings.get("base_url"):
        raise ValueError("backends.openai.base_url is not set, so VAGEN would call OpenAI's API, which needs a key: "
                         "export OPENAI_API_KEY, or give backends.openai.base_url=http://127.0.0.1:8000/v1 for a "
                         "server of your own")
    return ["backends.openai.api_key=EMPTY"]


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m sokoban_tools vagen",
                    description="VAGEN's evaluator on the 256 validation boards, as an episode log")
    actions = parser.add_subparsers(dest="action", required=True)
    for name, text in (("evaluate", "run VAGEN's evaluator, then log its episodes"),
                       ("log", "log the episodes of an evaluation VAGEN ran already")):
        sub = actions.add_parser(name, help=text, description=text)
        sub.add_argument("--config", type=Path, default=EVAL_CONFIG,
                         help="VAGEN evaluation config (default: the shipped eval_validation.yaml)")
        sub.add_argument("--episode-log", type=Path, required=True, help="the episode log to append to")
        sub.add_argument("--method", help="the method's name in the log (default: the backend's model)")
        sub.add_argument("--run", default="0", help="the run's name in the log (default: 0)")
        sub.add_argument("--update", type=int, default=0, help="the training update evaluated (default: 0)")
        sub.add_argument("--trained", action="store_true",
                         help="the model was trained on fairness/train.jsonl (recorded in the manifest)")
        sub.add_argument("overrides", nargs="*", help="VAGEN config overrides, e.g. backends.openai.model=NAME")
    actions.choices["evaluate"].add_argument(
        "--verbose", action="store_true",
        help=f"show everything VAGEN prints (default: a progress bar, VAGEN's output in {RUN_OUTPUT} in the dump "
             f"folder)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.config.is_file():
        print(f"error: {args.config}: no such config file", file=sys.stderr)
        return 1
    if args.update < 0:
        print(f"error: --update must be a non-negative integer, got {args.update}", file=sys.stderr)
        return 1
    printed = io.StringIO()  # what VAGEN prints, unless --verbose: kept beside its dump
    try:
        with quietly(printed, getattr(args, "verbose", False)):
            cfg, dump_dir = effective_config(args.config, args.overrides)
    except ImportError as err:
        print(f"error: {NO_VAGEN.format(err)}", file=sys.stderr)
        return 1
    except Exception as err:  # OmegaConf's and YAML's own errors: a config or override that does not parse
        print(redacted(f"error: {args.config} with the overrides {args.overrides} does not compose: "
                       f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"), file=sys.stderr)
        return 1
    if dump_dir.resolve().is_relative_to(EVAL_CONFIG.parent.resolve()):
        print(f"error: experiment.dump_dir resolves to {dump_dir}, inside the installed package: VAGEN resolves a "
              f"relative path against the config's folder; give an absolute path "
              f"(experiment.dump_dir=$PWD/runs/vagen-rollouts)", file=sys.stderr)
        return 1
    try:
        spec = fairness_spec(cfg)
        backend = str((cfg.get("run") or {}).get("backend", "openai")).lower()
        method = args.method or (cfg.get("backends") or {}).get(backend, {}).get("model") or "VAGEN"
        if args.action == "evaluate":
            args.overrides += key_override(cfg, backend)
        manifest = manifest_from_vagen_config(cfg, method, args.trained)
        with episode_writer(args.episode_log) as writer:  # the log's lock, held until the records are in
            records = _log_evaluation(args, cfg, spec, backend, method, manifest, dump_dir, writer, printed)
    except (ValueError, OSError) as err:  # DataError, ManifestError and LogInUse are among them
        print(f"error: {redacted(error_text(err))}", file=sys.stderr)
        return 1
    wins = sum(record.won for record in records)
    print(f"{len(records)} episodes ({wins} won) of {method!r} appended to {args.episode_log}; "
          f"score them with: python -m sokoban_tools score {args.episode_log}")
    return 0


def _log_evaluation(args, cfg, spec, backend, method, manifest, dump_dir, writer, printed: io.StringIO) -> list:
    """Check the log, run VAGEN (``evaluate``), check its dump and append its records with the
    manifest, under the log's lock; ``log`` writes nothing for a dump that fails a check."""
    key = (method, args.run, args.update)
    if args.episode_log.exists() and any((r.method, r.run, r.update) == key and r.phase == "validation"
                                         for r in read_episodes(args.episode_log)):
        raise DataError(f"{args.episode_log}: already holds a validation pass of method {method!r}, run "
                        f"{args.run!r} at update {args.update}; give another --run or another log")
    tag_dir = dump_dir / f"tag_{spec['tag_id']}"
    claim_dump(tag_dir, cfg, backend, args.action == "evaluate")
    if args.action == "evaluate":
        writer.write_manifest(manifest, args.episode_log)  # a mismatch refused before VAGEN's long run, as a trainer's
        saved, sys.argv = sys.argv, ["vagen.evaluate.run_eval", "--config", str(args.config), *args.overrides]
        try:
            with quietly(printed, args.verbose, progress="VAGEN episodes"):
                register()
                from vagen.evaluate import run_eval

                run_eval.main()
        finally:
            sys.argv = saved
            if not args.verbose:
                dump_dir.mkdir(parents=True, exist_ok=True)
                write_atomic(dump_dir / RUN_OUTPUT, redacted(printed.getvalue()).encode("utf-8"))
    env = spec.get("config") or {}
    records = records_from_dump(tag_dir, method, args.run, args.update, env.get("fairness_boards"),
                                env.get("fairness_revision"))
    if len(records) != VALIDATION_SIZE:
        raise DataError(f"{tag_dir}: holds {len(records)} of the {VALIDATION_SIZE} validation boards; "
                        f"evaluate them all (n_envs: {VALIDATION_SIZE} with the shipped seed_list)")
    if args.action == "log":
        writer.write_manifest(manifest, args.episode_log)  # only once the dump has passed every check
    writer.append(records)
    return records
