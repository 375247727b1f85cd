"""The ``benchmark`` rows of ``evaluate``: its own work per turn, a full pass against the bare client,
and a real model on a real server (:func:`real_server_figures`).

Both play the validation boards with the loopback server's random model
(:mod:`sokoban_tools.integrations.served.demo_model`), whose move is drawn from each request's seed, so an
offline pass here (no HTTP) walks exactly the positions the served pass walks, and
yields exactly the requests ``evaluate`` sends. The bare client then sends those
same requests, prepared beforehand, through the same ``openai`` client at the same
concurrency; ``evaluate`` is timed in the same run, interleaved, best of each.
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

from ...layout import ROOT, VALIDATION_DATA
from ...protocol import DEFAULT_MAX_STEPS
from ...records.tasks import load_validation
from ...integrations.served.client import Decoding
from ...integrations.served.turn import Episode, image_url, request_seed
from ...integrations.served.demo_model import LoopbackServer, Script, random_policy

CONCURRENCY = 32  # evaluate's default
REPEATS = 2
GOALS = {"turn": "≤ 2 ms", "pass": "≤ 1.3× the bare client", "harness": "≤ 2% of the wall time"}
REAL_BOARDS = 1  # boards of the real-model rows: at the protocol's decoding a turn takes seconds


def offline_pass(seed: int = 0) -> tuple[float, list[tuple[list[dict], int]], set]:
    """CPU seconds of ``evaluate``'s own work over a full random pass (draw, process_image,
    PNG, message, projection, step; the image cache emptied first), the requests
    (messages, seed) that pass sends, and the positions it shows."""
    rows = load_validation(ROOT / VALIDATION_DATA)
    image_url.cache_clear()
    requests, positions = [], set()
    started = time.process_time()
    for row in rows:
        episode = Episode(row, DEFAULT_MAX_STEPS)
        while not episode.done:
            seed_of_turn = request_seed(seed, row.task_id, episode.turns)
            requests.append((episode.messages(), seed_of_turn))
            positions.add(episode.env.board)
            episode.answer(random_policy(episode.env.board, seed_of_turn))
    return time.process_time() - started, requests, positions


def image_seconds(positions) -> float:
    """CPU seconds per position of the image alone, drawn and encoded without the cache."""
    started = time.process_time()
    for board in positions:
        image_url.__wrapped__(board)
    return (time.process_time() - started) / len(positions)


def _bare(base_url: str, requests: list[tuple[list[dict], int]], model: str) -> float:
    """Wall seconds of the bare client sending ``requests`` at :data:`CONCURRENCY`."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0, timeout=120)
    fields = Decoding().request_fields()

    def send(request):
        messages, seed = request
        client.chat.completions.create(model=model, messages=messages, n=1, seed=seed, **fields)

    started = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(send, requests))
    return time.perf_counter() - started


def _evaluate(base_url: str, model: str) -> float:
    """Wall seconds of ``evaluate`` playing the 256 boards at :data:`CONCURRENCY`."""
    from ...integrations.served.evaluate import main

    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        with redirect_stdout(StringIO()):
            code = main(["--base-url", base_url, "--model", model, "--log", str(Path(folder) / "log.jsonl"),
                         "--concurrency", str(CONCURRENCY)])
        seconds = time.perf_counter() - started
    if code:
        raise RuntimeError(f"evaluate failed against the loopback server (exit {code})")
    return seconds


def served_figures() -> list[tuple[str, str, str, str]]:
    """(what, this code, bare client in the same run, goal) rows."""
    harness_s, requests, positions = offline_pass()
    first_s = image_seconds(positions)
    script = Script("random", keep=False)
    with LoopbackServer(script) as server:
        bare_times, evaluate_times = [], []
        for _ in range(REPEATS):
            bare_times.append(_bare(server.base_url, requests, script.model))
            evaluate_times.append(_evaluate(server.base_url, script.model))
    bare, ours = min(bare_times), min(evaluate_times)
    return [
        (f"`evaluate`'s own work per turn: draw, `process_image`'s upscaling, PNG data URL, projection, step "
         f"(a full random pass, {len(requests):,} turns, {len(positions):,} positions, each image made once; in brackets, the "
         f"image of a position made anew; CPU time)",
         f"{harness_s / len(requests) * 1e3:.2f} ms ({first_s * 1e3:.2f} ms)", "", GOALS["turn"]),
        (f"`evaluate`, a full pass of {len(requests):,} requests against the zero-latency loopback server, "
         f"{CONCURRENCY} boards at once, vs the bare `openai` client sending the same requests {CONCURRENCY} at "
         f"once (wall time, best of {REPEATS} interleaved; the server shares the process)",
         f"{ours:.1f} s ({ours / bare:.2f}×)", f"{bare:.1f} s", GOALS["pass"]),
    ]


def real_server_figures(boards: int = REAL_BOARDS) -> list[tuple[str, str, str, str]]:
    """``evaluate --mode tiny_rgb_array`` against SmolLM2-135M-Instruct on llama.cpp's server
    (:mod:`.real_model`) at the protocol's decoding, ``boards`` boards one request at a time:
    seconds per turn, the tokens per second the server delivered, and the share of the wall
    time the harness itself took (this process's CPU time: the turn, the client, the log)."""
    from ...integrations.served.evaluate import main
    from ...records.manifest import manifest_path, read_manifest
    from .real_model import MODEL, LlamaServer

    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "log.jsonl"
        with LlamaServer(Path(folder) / "server.log") as server:
            cpu, started = time.process_time(), time.perf_counter()
            with redirect_stdout(StringIO()):
                code = main(["--base-url", server.base_url, "--model", MODEL, "--log", str(log), "--mode",
                             "tiny_rgb_array", "--boards", str(boards), "--concurrency", "1", "--timeout", "1800",
                             "--server-kind", "llama.cpp"])
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        if code:
            raise RuntimeError(f"evaluate failed against llama.cpp's server (exit {code})")
        costs = {name: entry["value"] for name, entry in read_manifest(manifest_path(log))["costs"].items()}
    turns = costs["requests"]
    where = (f"SmolLM2-135M-Instruct (Q4_1 GGUF) on llama.cpp's server, `evaluate --mode tiny_rgb_array` at the "
             f"protocol's decoding, {boards} board(s), {turns:.0f} turns one at a time")
    return [
        (f"{where}: seconds per turn (wall time)", f"{wall / turns:.1f} s", "", ""),
        (f"{where}: tokens per second the server delivered (prompt + completion; completion alone in brackets)",
         f"{(costs['prompt_tokens'] + costs['completion_tokens']) / wall:.0f} tokens/s "
         f"({costs['completion_tokens'] / wall:.1f})", "", ""),
        (f"{where}: the harness's share of the wall time (evaluate's CPU time: turn, client, log)",
         f"{cpu / wall:.2%}", "", GOALS["harness"]),
    ]
