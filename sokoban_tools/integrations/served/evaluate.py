"""``python -m sokoban_tools evaluate``: a served model on the 256 validation boards.

    python -m sokoban_tools evaluate --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-VL-3B-Instruct \\
        --log runs/qwen3b-base.jsonl [--method NAME --run NAME --update N] [--resume]
    python -m sokoban_tools evaluate --mode tiny_rgb_array --history-length 2 --base-url ... --model ... --log ...

Each board is played from its stored start as verl-agent's validation plays it
(:mod:`.turn`), with its visual turn (``--mode rgb_array``, the default: a
vision-language model) or its text turn (``--mode tiny_rgb_array``, verl-agent's own
default: any chat model, :mod:`.text_turn`), against any OpenAI-compatible
chat-completions server, boards
``--concurrency`` at a time. Every finished board's record is appended to the
episode log at once, and the run manifest beside it (written before the first
request) states the model, decoding, image processing and horizon, and the costs
(requests, tokens, wall time): ``score`` and ``compare`` read both as they read a
patched trainer's. A run that stops part-way (killed, interrupted, a failure no
retry mends) is finished by running the same command with ``--resume``: the boards
already in the log are kept, the others are played from their start, so the log
ends with every board once. The run holds the log's lock
(:func:`sokoban_tools.records.episodes.episode_writer`) from before it reads the log: a
second process on the same log is refused in one line. ``--boards N`` plays the first N boards only: a quick
look, not the protocol (``score`` refuses an incomplete pass).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import PIL

from sokoban_published import ChecksumError

from ...help_text import Parser
from ...layout import TRAIN_DATA, VALIDATION_DATA
from ...paths import PathError, error_text, unwritable
from ...protocol import DEFAULT_MAX_STEPS, VALIDATION_SIZE
from ...records.boards import BoardsNotFound, load_boards
from ...records.episodes import EpisodeRecord, EpisodeWriter, episode_writer, read_episodes
from ...records.manifest import (BUDGET_UNIT, NOTES, SETTING, UPDATES, ManifestError, boards_note, environment_settings,
                                 manifest_path, new_manifest, read_manifest)
from ...records.rows import BoardRow, DataError
from .client import Decoding, ServedModel, Stop, public_url, without_credentials
from .prompt import TEXT_PROMPT_NO_HISTORY_SHA256, TEXT_PROMPT_SHA256, UPSTREAM_COMMIT, VISUAL_PROMPT_SHA256
from .turn import MIN_PIXELS, MODES, VISUAL_MODE, Episode, request_seed

# verl-agent's launcher (run_sokoban.sh) and config (ppo_trainer.yaml) at UPSTREAM_COMMIT
LAUNCHER = {"temperature": 0.4, "do_sample": True, "top_p": 1.0, "top_k": -1, "response_length": 512,
            "max_prompt_length": 1024, "history_length": 2}
# the settings an evaluation plays; the others describe how the weights were trained
PLAYED = ("initial_weights.model", "initial_weights.revision", "image_processing.observation",
          "image_processing.max_prompt_length", "image_processing.history_length", "action_horizon", "reward.step",
          "reward.box_on_target", "reward.box_off_target", "reward.solved")
COST_INTERVAL = 10.0  # seconds between writes of the costs into the manifest


def parser() -> argparse.ArgumentParser:
    """The options; each help names its default, verl-agent's launcher setting where it has one."""
    p = Parser(prog="python -m sokoban_tools evaluate", description=__doc__.split("\n\n")[0])
    p.add_argument("--base-url", required=True, help="the server's OpenAI-compatible URL, ending in /v1")
    p.add_argument("--model", required=True, help="the model as the server names it; recorded as the weights")
    p.add_argument("--revision", default=None, help="the weights' revision (commit) or digest, recorded")
    p.add_argument("--log", required=True, type=Path, help="the episode log (JSONL) to append to; the run "
                   "manifest goes beside it")
    p.add_argument("--method", default=None, help="the method label of the records (default: the --model)")
    p.add_argument("--run", default=None, help="the run label of the records (default: seed<SEED>)")
    p.add_argument("--update", type=int, default=0, help="the training update the weights are from (default: 0, "
                   "before training)")
    p.add_argument("--resume", action="store_true", help="finish the evaluation already begun in --log: keep "
                   "its finished boards, play the others from their start")
    p.add_argument("--boards", type=int, default=None, metavar="N",
                   help="play only the first N boards in stored order: a quick look, NOT the protocol "
                        "(default: all 256)")
    p.add_argument("--mode", choices=MODES, default=VISUAL_MODE,
                   help="verl-agent's env.sokoban.mode: rgb_array, the image turn of a vision-language model; "
                        "tiny_rgb_array, the text turn (verl-agent's default) of any chat model (default: rgb_array)")
    p.add_argument("--history-length", type=int, default=LAUNCHER["history_length"],
                   help="verl-agent's env.history_length: earlier turns a text prompt shows, 0 for none; a visual "
                        f"prompt shows none whatever it is, but it is recorded (default: {LAUNCHER['history_length']})")
    p.add_argument("--seed", type=int, default=0,
                   help="the evaluation's seed, from which each request's is derived (default: 0)")
    p.add_argument("--temperature", type=float, default=LAUNCHER["temperature"],
                   help=f"sampling temperature (default: {LAUNCHER['temperature']}, verl-agent's val_kwargs)")
    p.add_argument("--top-p", type=float, default=LAUNCHER["top_p"],
                   help=f"nucleus sampling's top-p (default: {LAUNCHER['top_p']}, verl-agent's val_kwargs)")
    p.add_argument("--top-k", type=int, default=LAUNCHER["top_k"],
                   help=f"top-k sampling, -1 for off (default: {LAUNCHER['top_k']}, verl-agent's val_kwargs)")
    p.add_argument("--greedy", action="store_true", help="greedy decoding (val_kwargs.do_sample=False) instead of "
                   "sampling")
    p.add_argument("--max-tokens", type=int, default=LAUNCHER["response_length"],
                   help=f"tokens an answer may have (default: {LAUNCHER['response_length']}, "
                        f"data.max_response_length)")
    p.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS,
                   help=f"turns an episode may take (default: {DEFAULT_MAX_STEPS}, env.max_steps)")
    p.add_argument("--max-prompt-length", type=int, default=LAUNCHER["max_prompt_length"],
                   help=f"a prompt the server counts longer stops the run, as verl-agent's truncation='error' does "
                        f"(default: {LAUNCHER['max_prompt_length']}, data.max_prompt_length)")
    p.add_argument("--concurrency", type=int, default=32, help="boards played at once (default: 32)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds a request may take before it is retried (default: 120)")
    p.add_argument("--retries", type=int, default=5, help="retries of a request on 429, 5xx, timeouts (default: 5)")
    p.add_argument("--backoff", type=float, default=1.0,
                   help="seconds before the first retry; doubles each time (default: 1)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VARIABLE",
                   help="the environment variable holding the API key, never written anywhere (default: "
                        "OPENAI_API_KEY; if unset, a placeholder key, which a local server takes)")
    p.add_argument("--server-kind", default=None,
                   help="what serves the model, recorded (default: the owner the server lists, e.g. vllm)")
    p.add_argument("--settings-from", type=Path, default=None, metavar="MANIFEST",
                   help="the run manifest of the training run the weights come from: its training settings "
                        "are recorded, so compare checks the rest against that run")
    boards = p.add_mutually_exclusive_group()
    boards.add_argument("--dataset-dir", type=Path, default=None, metavar="FOLDER",
                        help="a local copy of the dataset repository to take the boards from (default: the clone "
                             "this runs from, else the pinned release on the Hub)")
    boards.add_argument("--hub-revision", default=None, metavar="REVISION",
                        help="the Hub revision to take the boards from (default: the pinned release)")
    return p


MAX_WAIT = 86_400  # seconds: past this a wait is no setting but a typo (and inf overflows the clock)


def check_options(p: argparse.ArgumentParser, args) -> None:
    for name, low in (("update", 0), ("history_length", 0), ("boards", 1), ("max_tokens", 1), ("max_steps", 1),
                      ("max_prompt_length", 1),
                      ("concurrency", 1), ("retries", 0)):
        value = getattr(args, name)
        if value is not None and value < low:
            p.error(f"--{name.replace('_', '-')} must be at least {low}, got {value}")
    for name in ("timeout", "backoff"):
        if not 0 < getattr(args, name) <= MAX_WAIT:
            p.error(f"--{name} must be a positive number of seconds, at most {MAX_WAIT:,} (a day)")
    if not 0 <= args.temperature or not 0 < args.top_p <= 1 or (args.top_k < 1 and args.top_k != -1):
        p.error("decoding: --temperature >= 0, 0 < --top-p <= 1, --top-k -1 (off) or >= 1")
    if args.boards is not None and args.boards > VALIDATION_SIZE:
        p.error(f"--boards is at most {VALIDATION_SIZE}, the validation boards")
    if urlsplit(args.base_url).scheme not in ("http", "https"):
        p.error(f"--base-url must be an http(s) URL such as http://127.0.0.1:8000/v1, "
                f"got {without_credentials(args.base_url)!r}")
    for name in ("model", "method", "run", "revision", "server_kind"):
        value = getattr(args, name)
        if value is not None and not value.strip():
            p.error(f"--{name.replace('_', '-')} must not be empty")
    problem = unwritable(args.log, "--log")
    if problem:
        p.error(f"--log {problem}")


def api_key(args) -> str:
    """The key from the named variable; a local server needs none (vLLM takes any)."""
    key = os.environ.get(args.api_key_env)
    if key is None and args.api_key_env != "OPENAI_API_KEY":
        raise Stop(f"the environment variable {args.api_key_env} (--api-key-env) is not set: export the key in it")
    return key or "EMPTY"


@dataclass(frozen=True)
class Played:
    """What an evaluation played, as its manifest records it: ``evaluate``'s options, or those of
    another evaluator that plays the same episode (``inspect-log``'s task, a TRL run's validation,
    which names the turn only). ``trained``: the manifest of the run the weights come from
    (``--settings-from``, read once), ``None`` without one."""

    mode: str
    history_length: int
    max_steps: int
    max_prompt_length: int
    model: str | None = None
    revision: str | None = None
    method: str | None = None
    seed: int = 0
    base_url: str = ""
    settings_from: Path | None = None
    trained: dict | None = None

    @classmethod
    def of(cls, args, trained: dict | None) -> "Played":
        """What ``evaluate``'s parsed options ``args`` play, with ``trained`` read from ``--settings-from``."""
        return cls(args.mode, args.history_length, args.max_steps, args.max_prompt_length, args.model,
                   args.revision, args.method, args.seed, args.base_url, args.settings_from, trained)


def manifest_for(played: Played, decoding: Decoding, server_kind: str, boards: int) -> dict:
    """The run manifest of this evaluation (see the module docstring and ``--settings-from``)."""
    trained = played.trained
    settings = {key: None for key in SETTING}
    settings[BUDGET_UNIT] = UPDATES  # what --update counts, unless the training run's manifest says otherwise
    if trained is not None:
        settings.update((key, value) for key, value in trained["settings"].items() if key not in PLAYED)
    settings.update(environment_settings())
    settings.update({
        "initial_weights.model": played.model,
        "initial_weights.revision": played.revision,
        "image_processing.observation": played.mode,
        "image_processing.max_prompt_length": played.max_prompt_length,
        "image_processing.history_length": played.history_length,
        "action_horizon": played.max_steps,
        "decoding.validation.temperature": 0.0 if not decoding.do_sample else float(decoding.temperature),
        "decoding.validation.top_p": float(decoding.top_p),
        "decoding.validation.top_k": decoding.top_k,
        "decoding.validation.do_sample": decoding.do_sample,
        "decoding.validation.response_length": decoding.max_tokens,
        "decoding.validation.n": 1,
    })
    differences = off_protocol(played, decoding)
    notes = {
        "evaluator": "python -m sokoban_tools evaluate: verl-agent's validation episode against a served model",
        "server_kind": server_kind,
        "base_url": public_url(played.base_url),
        "boards": boards_note(boards),
        "protocol_settings": ("verl-agent's validation settings" if not differences else
                              "NOT verl-agent's validation settings: " + "; ".join(differences)),
        **turn_notes(played),
        "request_seed": f"seed {played.seed}: each request's seed is the first 31 bits of "
                        f"SHA-256('{played.seed}/<task_id>/<turn>')",
        "settings_from": str(played.settings_from) if played.settings_from is not None else None,
    }
    train_digest = trained["data_sha256"].get(TRAIN_DATA) if trained is not None else None
    return new_manifest(played.method, settings, notes, trained=train_digest is not None)


def off_protocol(played: Played, decoding: Decoding) -> list[str]:
    """Each played setting that is not verl-agent's validation one, with the launcher's value:
    what the manifest says plainly when a run was cut to fit a slow server or a budget."""
    compared = {"env.max_steps": (played.max_steps, DEFAULT_MAX_STEPS),
                "data.max_response_length": (decoding.max_tokens, LAUNCHER["response_length"]),
                "data.max_prompt_length": (played.max_prompt_length, LAUNCHER["max_prompt_length"]),
                "val_kwargs.do_sample": (decoding.do_sample, LAUNCHER["do_sample"])}
    if decoding.do_sample:
        compared.update({"val_kwargs.temperature": (decoding.temperature, LAUNCHER["temperature"]),
                         "val_kwargs.top_p": (decoding.top_p, LAUNCHER["top_p"]),
                         "val_kwargs.top_k": (decoding.top_k, LAUNCHER["top_k"])})
    if played.mode != VISUAL_MODE:  # a visual prompt shows no history whatever env.history_length is
        compared["env.history_length"] = (played.history_length, LAUNCHER["history_length"])
    return [f"{key} {value} (verl-agent: {default})" for key, (value, default) in compared.items()
            if value != default]


def turn_notes(played: Played) -> dict:
    """What the manifest says of the turn: the prompt's source and digest, and the image or history."""
    if played.mode == VISUAL_MODE:
        return {
            "prompt": f"verl-agent {UPSTREAM_COMMIT[:12]} SOKOBAN_VISUAL_TEMPLATE (sha256 {VISUAL_PROMPT_SHA256}), "
                      f"one user message per turn, the image in place of <image>",
            "image": f"process_image of the 96x96 frame: upscaled to >= {MIN_PIXELS} pixels (256x256) with Pillow "
                     f"{PIL.__version__}'s default resampling, sent as a PNG data URL",
            "history_length": "rgb_array prompts show no history, whatever env.history_length",
        }
    return {
        "prompt": f"verl-agent {UPSTREAM_COMMIT[:12]} SOKOBAN_TEMPLATE_NO_HIS (sha256 {TEXT_PROMPT_NO_HISTORY_SHA256}) "
                  f"on the first turn, then SOKOBAN_TEMPLATE (sha256 {TEXT_PROMPT_SHA256}), one user message of "
                  f"plain text per turn with the board's tiny_rgb_array grid",
        "history_length": (f"{played.history_length}: SimpleMemory.fetch's last {played.history_length} grids and "
                           f"actions in every prompt after the first" if played.history_length > 0 else
                           "0: every prompt is SOKOBAN_TEMPLATE_NO_HIS, no history"),
    }


def record_manifest(writer: EpisodeWriter, log: Path, manifest: dict, resuming: bool, seed: int) -> None:
    """Write the manifest beside ``log`` through its ``writer``, or keep the one there (same method
    and settings, its costs) with the notes of this run: the board set, the server's URL may change on
    ``--resume``; the request seed may not (``resuming``: the log holds this evaluation's
    boards, whose requests were seeded by the seed the manifest notes; ``seed`` is this run's)."""
    path = manifest_path(log)
    if resuming and path.is_file():
        before = (read_manifest(path).get(NOTES) or {}).get("request_seed")
        if before is not None and before != manifest[NOTES]["request_seed"]:
            raise Stop(f"{log}: its boards were played with request {before.split(':')[0]} (its manifest "
                       f"{path.name}), not --seed {seed}: "
                       f"resuming would mix request seeds in one pass; resume with the first run's --seed, or "
                       f"give this evaluation another --run")
    kept = writer.write_manifest(manifest, log)
    if kept.get(NOTES) != manifest[NOTES]:
        kept[NOTES] = manifest[NOTES]
        writer.rewrite_manifest(kept)


def finished_boards(writer: EpisodeWriter, args, rows: list[BoardRow], sha256: str) -> dict[str, EpisodeRecord]:
    """The records this evaluation already holds in ``log`` (with ``--resume``), checked; a
    last line cut by a kill is set aside beside the log (its board is played again), once
    every complete line has been checked. Without ``--resume`` any such record stops the run."""
    log = writer.path
    if not log.exists():
        return {}
    if args.resume:
        moved = writer.set_aside("torn-line", keep=lambda record: True)
        if moved is not None:
            print(f"{moved.notice(log)}; its board is played again", file=sys.stderr)
    records = read_episodes(log)
    mine = [r for r in records if (r.phase, r.method, r.run, r.update) ==
            ("validation", args.method, args.run, args.update)]
    label = f"method {args.method!r}, run {args.run!r}, update {args.update}"
    if mine and not args.resume:
        raise Stop(f"{log} already holds {len(mine)} records of {label}: add --resume to finish that evaluation, "
                   f"or give another --log, --run or --update")
    wanted = {row.task_id for row in rows}
    held: dict[str, EpisodeRecord] = {}
    for record in mine:
        if record.evaluation_sha256 != sha256:
            raise Stop(f"{log}: the records of {label} played another evaluation.jsonl ({record.evaluation_sha256}); "
                       f"give this evaluation another --log")
        if record.task_id not in wanted:
            raise Stop(f"{log}: {record.task_id} of {label} is not among the boards chosen (--boards {args.boards}); "
                       f"resume with the --boards of the first run")
        if record.task_id in held:
            raise Stop(f"{log}: {record.task_id} appears twice in {label}; the log was edited or mixes two runs: "
                       f"give this evaluation another --log")
        held[record.task_id] = record
    return held


class Evaluation:
    """The boards still to play, played ``concurrency`` at a time; records appended as they finish."""

    def __init__(self, args, model: ServedModel, rows: list[BoardRow], sha256: str, held: dict,
                 writer: EpisodeWriter):
        self.args, self.model, self.sha256, self.writer = args, model, sha256, writer
        self.todo = [row for row in rows if row.task_id not in held]
        self.boards = len(rows)
        self.played = len(held)
        self.wins = sum(record.won for record in held.values())
        self.lock = threading.Lock()
        self.stop = model.stop
        self.failure: BaseException | None = None  # what stopped the run (see stopped_by)
        self.progress = None
        self.spent: dict[str, float] = {}  # this run's costs
        self.wall = 0.0

    def play_board(self, row: BoardRow) -> EpisodeRecord | None:
        episode = Episode(row, self.args.max_steps, self.args.mode, self.args.history_length)
        while not episode.done:
            if self.stop.is_set():
                return None
            try:
                answer = self.model.complete(episode.messages(),
                                             request_seed(self.args.seed, row.task_id, episode.turns))
                if answer.prompt_tokens is not None and answer.prompt_tokens > self.args.max_prompt_length:
                    raise Stop(f"the server counts {answer.prompt_tokens} prompt tokens, over --max-prompt-length "
                               f"{self.args.max_prompt_length} (data.max_prompt_length), a prompt verl-agent's "
                               f"validation refuses: serve the model verl-agent trains, or raise both limits "
                               f"together")
            except BaseException as err:
                self.stopped_by(err)
                raise
            episode.answer(answer.text)
        record = episode.record(self.args.method, self.args.run, self.args.update, self.sha256)
        with self.lock:  # a finished episode is recorded even if the run is stopping
            self.writer.append([record])
            self.played += 1
            self.wins += record.won
            if self.progress is not None:
                self.progress.set_postfix_str(f"success {self.wins}/{self.played}", refresh=False)
                self.progress.update(1)
        return record

    def stopped_by(self, error: BaseException) -> None:
        """Stop the run at once, so no other board asks the server again, and keep ``error`` as
        what stopped it if nothing had: the requests in flight then fail because the run stopped,
        and whichever of them finishes first must not be named as the cause."""
        with self.lock:
            if not self.stop.is_set():
                self.failure = error
                self.stop.set()

    def run(self) -> Stop | None:
        """Play every board left; the failure that stopped the run, if one did."""
        from tqdm import tqdm

        last_costs = time.monotonic()
        started = last_costs
        self.progress = tqdm(total=self.boards, initial=self.played, desc="boards", unit="board", disable=None,
                             file=sys.stderr, dynamic_ncols=True)
        pool = ThreadPoolExecutor(max_workers=self.args.concurrency, thread_name_prefix="board")
        try:
            pending = {pool.submit(self.play_board, row) for row in self.todo}
            while pending:
                done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                for future in done:
                    if (error := future.exception()) is not None:
                        self.stopped_by(error)  # a failure outside a request
                if time.monotonic() - last_costs > COST_INTERVAL:
                    now = time.monotonic()
                    self.write_costs(now - last_costs)
                    last_costs = now
        except KeyboardInterrupt:
            self.stop.set()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            self.progress.close()
            self.write_costs(time.monotonic() - last_costs)
            self.wall = time.monotonic() - started
        failure = self.failure
        return failure if failure is None or isinstance(failure, Stop) else Stop(f"{type(failure).__name__}: {failure}")

    def write_costs(self, seconds: float) -> None:
        entries = self.model.usage.take()
        entries["wall_time"] = ("seconds", round(seconds, 3))
        for name, (_, value) in entries.items():
            self.spent[name] = self.spent.get(name, 0) + value
        self.writer.add_costs(entries)


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    check_options(p, args)
    args.method = args.method or args.model
    args.run = args.run or f"seed{args.seed}"
    try:
        writer = episode_writer(args.log)  # the log's lock, held for the run, before anything is written
    except (OSError, ValueError) as err:
        print(f"error: {without_credentials(error_text(err))}", file=sys.stderr)
        return 1
    with writer:
        return evaluate(args, writer)


def evaluate(args, writer: EpisodeWriter) -> int:
    """The evaluation of ``args`` once its options are checked, holding the log's ``writer``."""
    decoding = Decoding(args.temperature, args.top_p, args.top_k, not args.greedy, args.max_tokens)
    try:
        rows, sha256 = load_boards(VALIDATION_DATA, args.dataset_dir, args.hub_revision)
        rows = rows[:args.boards] if args.boards is not None else rows
        held = finished_boards(writer, args, rows, sha256)
        # --settings-from is read once, and refused now, before the server is asked anything
        played = Played.of(args, None if args.settings_from is None else read_manifest(args.settings_from))
        model = ServedModel(args.base_url, args.model, api_key(args), decoding, timeout=args.timeout,
                            retries=args.retries, backoff=args.backoff)
        server_kind = args.server_kind or model.check() or "openai-compatible"
        record_manifest(writer, args.log, manifest_for(played, decoding, server_kind, len(rows)),
                        resuming=bool(held), seed=args.seed)
    except (Stop, DataError, ChecksumError, PathError, BoardsNotFound, OSError) as err:
        print(f"error: {without_credentials(error_text(err))}", file=sys.stderr)
        return 1
    evaluation = Evaluation(args, model, rows, sha256, held, writer)
    if held:
        print(f"resuming: {len(held)} of {len(rows)} boards already in {args.log}", file=sys.stderr)
    try:
        failure = evaluation.run()
    except KeyboardInterrupt:
        print(f"stopped: {evaluation.played} of {len(rows)} boards are in {args.log}; run the same command with "
              f"--resume to finish", file=sys.stderr)
        return 130
    except (ManifestError, OSError, ValueError) as err:
        print(f"error: {without_credentials(error_text(err))}", file=sys.stderr)
        return 1
    if failure is not None:
        print(f"error: {without_credentials(str(failure))}", file=sys.stderr)
        print(f"{evaluation.played} of {len(rows)} boards are in {args.log}; once fixed, run the same command with "
              f"--resume to play the rest", file=sys.stderr)
        return 1
    spent = evaluation.spent
    print(f"{args.method} ({args.run}, update {args.update}): {evaluation.wins}/{evaluation.played} boards won "
          f"({evaluation.wins / evaluation.played:.1%}); this run: {spent['requests']:,} requests "
          f"({spent['retried_requests']:,} retried), {spent['prompt_tokens']:,} prompt and "
          f"{spent['completion_tokens']:,} completion tokens, {evaluation.wall:.1f} s; log {args.log}")
    print(next_step(len(rows), args.log))
    differences = off_protocol(played, decoding)
    if differences:
        print(f"note: not verl-agent's validation settings: {'; '.join(differences)} (the manifest says so)")
    return 0


def next_step(boards: int, log: Path, how: str = "") -> str:
    """A writer's last line: how to score its log, or, for fewer than all boards (``how`` says by
    what option), how to look at it, which is no result."""
    if boards < VALIDATION_SIZE:
        return (f"note: {boards} of {VALIDATION_SIZE} boards{f' ({how})' if how else ''}, a quick look, not the "
                f"protocol: python -m sokoban_tools score {log} --quick-look shows it, as no result (compare and "
                f"the leaderboard take complete passes only)")
    return f"score it: python -m sokoban_tools score {log}"


if __name__ == "__main__":
    sys.exit(main())
