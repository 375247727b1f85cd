"""A demo model behind a real OpenAI-compatible HTTP server on 127.0.0.1.

    python -m sokoban_tools demo-model [--policy random|shortest|bad-answers|mixed] [--port 8000]

Something to point ``evaluate`` at without a GPU (the quick start does), and what
``evaluate`` is tested and timed against (``tests/test_evaluate.py``, the
``benchmark`` rows): a :class:`LoopbackServer` (``http.server`` in a thread, loopback
only, bounded request size) answering ``GET /v1/models`` and ``POST
/v1/chat/completions`` as vLLM does. The "model" sees only the request: from a visual
turn (a list of parts) it decodes the PNG data URL and reads the board from the pixels
(:func:`read_board`: each 16x16 tile of the frame matched against the renderer's
tiles); from a text turn (a plain string) it reads the current grid of the prompt
(:func:`read_text_board`). It answers by its policy (:data:`POLICIES`) in the format
verl-agent's projection reads (``<think>...</think><action>up</action>``), or in VAGEN's
reply format when the request is VAGEN's (a system prompt and the turns so far:
:func:`vagen_answer`). For the
tests a :class:`Script` also makes it slow, answer 429/500 bursts, or die after a
number of requests (its socket closed, so the next connection is refused); every
request it answered is kept (:attr:`LoopbackServer.seen`) for the tests to compare
with what verl-agent's own code builds.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import numpy as np
from PIL import Image

from sokoban_render import TILE_SIZE, render_rgb

from ...checks import integer
from ...help_text import Parser
from ...rules.board import ACTION_NAMES, FLOOR, PLAYER, TARGET, WALL, Board
from ...rules.solver import shortest_solution
from ...runtime.projection import project_answer

MAX_REQUEST_BYTES = 1 << 20
FRAME = 96  # the environment's frame: 6x6 tiles of 16 pixels
# (room_fixed, room_state) of each tile the renderer draws
TILE_CODES = ((WALL, WALL), (FLOOR, FLOOR), (TARGET, TARGET), (TARGET, 3), (FLOOR, 4), (FLOOR, PLAYER),
              (TARGET, PLAYER))
TILES = np.stack([render_rgb([[f]], [[s]]) for f, s in TILE_CODES]).astype(np.float32)  # (7, 16, 16, 3)
# the tiny_rgb_array cell of each state code, as the runtime renders it; state code i is TILE_CODES[i]
TEXT_CELLS = {f" {symbol} \t": code for code, symbol in enumerate(("#", "_", "O", "\u221a", "X", "P", "S"))}
CURRENT_GRID = "current observation is:\n"
MALFORMED = ("I would push the box.", "<think>hm</think><action>jump</action>", "",
             "<think>x</think></action>up<action>", "<think>🙂</think><ACTION>stay</ACTION>")


def read_board(pixels: np.ndarray) -> Board:
    """The position an upscaled frame shows: scaled back to 96x96, each tile the nearest of
    the renderer's seven (:data:`TILES`)."""
    frame = pixels if pixels.shape[:2] == (FRAME, FRAME) else \
        np.asarray(Image.fromarray(pixels).resize((FRAME, FRAME), Image.Resampling.BOX))
    cells = frame.astype(np.float32).reshape(6, TILE_SIZE, 6, TILE_SIZE, 3).swapaxes(1, 2)
    distance = ((cells[:, :, None] - TILES[None, None]) ** 2).sum(axis=(3, 4, 5))
    codes = np.asarray(TILE_CODES)[distance.argmin(axis=2)]
    return Board.from_rooms(codes[..., 0], codes[..., 1])


def read_text_board(prompt: str) -> Board:
    """The position of the current grid of a text turn's ``prompt`` (the one after
    "current observation is:", up to the line of admissible actions)."""
    if CURRENT_GRID not in prompt:
        raise ValueError("the prompt shows no current observation")
    grid = prompt.rsplit(CURRENT_GRID, 1)[1].split("\nYour admissible actions", 1)[0]
    codes = []
    for line in grid.split("\n"):
        cells = [line[i:i + 4] for i in range(0, len(line), 4)]
        if not cells or any(cell not in TEXT_CELLS for cell in cells):
            raise ValueError(f"not a tiny_rgb_array row: {line!r}")
        codes.append([TILE_CODES[TEXT_CELLS[cell]] for cell in cells])
    codes = np.asarray(codes)
    return Board.from_rooms(codes[..., 0], codes[..., 1])


def decode_png_url(url: str) -> np.ndarray:
    prefix = "data:image/png;base64,"
    if not url.startswith(prefix):
        raise ValueError("the image is not a PNG data URL")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url[len(prefix):]))).convert("RGB"))


@lru_cache(maxsize=8192)
def _look(url: str) -> tuple[Board, str, tuple[int, ...]]:
    """What the model sees in an image (its pixels' position, digest and shape); a position
    that comes back (a walk into a wall) is looked at once."""
    pixels = decode_png_url(url)
    return read_board(pixels), hashlib.sha256(pixels.tobytes()).hexdigest(), pixels.shape


@lru_cache(maxsize=8192)
def next_on_shortest_path(board: Board) -> int:
    path = shortest_solution(board)
    return path[0] if path else 1


def answer_text(action: int, think: bool = True) -> str:
    word = ACTION_NAMES[action]
    return f"<think>I move {word}.</think><action>{word}</action>" if think else f"<action>{word}</action>"


def shortest_policy(board: Board, seed: int) -> str:
    return answer_text(next_on_shortest_path(board))


def random_policy(board: Board, seed: int) -> str:
    """A move uniform over 1-4, drawn from the request's seed (``baselines.json``'s ``moves_1_4``)."""
    return answer_text(random.Random(seed).randint(1, 4))


def malformed_policy(board: Board, seed: int) -> str:
    return MALFORMED[seed % len(MALFORMED)]


def observation_policy(board: Board, seed: int = 0) -> str:
    """A function of the position alone (no seed), so verl-agent's loop and ``evaluate``
    play it alike: mostly the shortest path, with and without a think block, some
    wasted moves, and on some positions malformed text (action 0, the board stuck)."""
    key = hashlib.sha256(repr((board.player, board.box, board.room_fixed)).encode()).digest()
    kind = key[0] % 20
    if kind == 0:
        return MALFORMED[key[1] % len(MALFORMED)]
    if kind in (1, 2):
        return answer_text(1 + key[1] % 4)
    return answer_text(next_on_shortest_path(board), think=kind % 3 != 0)


# The policies by the name ``demo-model --policy`` takes, with what each shows.
POLICIES: dict[str, Callable[[Board, int], str]] = {
    "random": random_policy,  # a move uniform over up/down/left/right: the random floor
    "shortest": shortest_policy,  # the next move of a shortest solution: every board solved
    "bad-answers": malformed_policy,  # answers the projection cannot read: every turn is action 0
    "mixed": observation_policy,  # mostly shortest, some wasted moves and bad answers
}
DEMO_MODEL = "sokoban-demo"
PORTS = (0, 65535)  # 0: any free port


def port_number(value) -> int:
    """``value`` (an int, or the text of ``--port``) as a port to listen on, 0 for any free one;
    a ``ValueError`` naming the range otherwise, so no socket call ever sees it."""
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ValueError(f"the port must be an integer from {PORTS[0]} to {PORTS[1]} (0: any free one), "
                             f"got {value!r}") from None
    return integer("the port (0: any free one)", value, *PORTS)


def _port_option(text: str) -> int:
    try:
        return port_number(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


@dataclass
class Script:
    """How the server behaves. ``fail``: ``{request number: status}`` answered instead of
    the model (numbers count from 1 over all requests); ``die_after``: requests answered
    before the server closes; ``delay``: seconds before each answer, ``slow`` before some."""

    policy: str = "shortest"
    model: str = DEMO_MODEL
    api_key: str | None = None
    fail: dict[int, int] = field(default_factory=dict)
    die_after: int | None = None
    delay: float = 0.0
    slow: dict[int, float] = field(default_factory=dict)  # {request number: seconds}, beside ``delay``
    images: bool = True  # False: a text-only model, which refuses an image as vLLM does
    keep: bool = True  # keep what each request showed (text, image) in ``seen``


@dataclass(frozen=True)
class Seen:
    """One request the model answered: the user text with ``<image>`` where the image was,
    the image's pixels (digest and shape; empty for a text turn), the request's seed and
    sampling fields, the answer."""

    text: str
    image_sha256: str  # of the pixels' bytes
    image_shape: tuple[int, ...]
    seed: int | None
    sampling: dict
    answer: str


class LoopbackServer:
    """A :class:`Script` served at :attr:`base_url` until :meth:`close` (a context manager)."""

    def __init__(self, script: Script, port: int = 0):
        self.script = script
        self.seen: list[Seen] = []
        self.requests = 0
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.listening = True
        self.closing = threading.Lock()
        self.server = _QuietServer(("127.0.0.1", port_number(port)), _handler(self))
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.closed.set()
        self._stop_listening()

    def _stop_listening(self) -> None:
        with self.closing:
            if self.listening:
                self.listening = False
                self.server.shutdown()
                self.server.server_close()

    def die(self) -> None:
        """Stop listening, from another thread, and drop every open connection's next
        request, as a crashed server does."""
        self.closed.set()
        threading.Thread(target=self._stop_listening, daemon=True).start()

    def respond(self, body: dict) -> tuple[int, dict] | None:
        """(status, JSON body) for one chat-completions request; ``None``: the server is dead,
        the connection is dropped unanswered."""
        script = self.script
        with self.lock:
            self.requests += 1
            number = self.requests
        if self.closed.is_set() or (script.die_after is not None and number > script.die_after):
            self.die()
            return None
        if number in script.fail:
            return script.fail[number], _error(f"scripted failure of request {number}")
        if body.get("model") != script.model:
            return 404, _error(f"The model `{body.get('model')}` does not exist.", "NotFoundError")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or messages[-1].get("role") != "user":
            return 400, _error("expected the messages to end with a user message")
        # verl-agent's turn is one user message; VAGEN's a system prompt and the turns so far
        vagen = len(messages) > 1
        content = messages[-1].get("content")
        if isinstance(content, str):  # a text turn: the grid is in the prompt
            text = [content]
            try:
                board, digest, shape = read_text_board(content), "", ()
            except ValueError as err:
                return 400, _error(f"a text turn without a readable grid: {err}")
        else:
            text, urls = [], []
            for part in content:
                if part["type"] == "text":
                    text.append(part["text"])
                elif part["type"] == "image_url":
                    text.append("<image>")
                    urls.append(part["image_url"]["url"])
            if urls and not script.images:
                return 400, _error("loopback-text is not a multimodal model: image input is not supported")
            if len(urls) != 1:
                return 400, _error(f"expected one image, got {len(urls)}")
            board, digest, shape = _look(urls[0])
        seed = body.get("seed")
        # a request without a seed (VAGEN sends none) draws from its number
        answer = POLICIES[script.policy](board, seed if seed is not None else number)
        if vagen:
            answer = vagen_answer(answer, board, script.policy)
        if script.delay or number in script.slow:
            time.sleep(script.delay + script.slow.get(number, 0.0))
        if script.keep:
            sampling = {key: body[key] for key in ("temperature", "top_p", "top_k", "max_tokens", "n") if key in body}
            with self.lock:
                self.seen.append(Seen("".join(text), digest, shape, seed, sampling, answer))
        return 200, {
            "id": f"chatcmpl-{number}", "object": "chat.completion", "created": int(time.time()),
            "model": script.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 81 + len("".join(text)) // 4, "completion_tokens": len(answer) // 4 + 1,
                      "total_tokens": 81 + len("".join(text)) // 4 + len(answer) // 4 + 1},
        }


VAGEN_MOVES = 3  # VAGEN's Sokoban example: up to 3 actions per turn


def vagen_answer(answer: str, board: Board, policy: str) -> str:
    """``answer`` (verl-agent's format) in VAGEN's reply format, which its wm, free_wm and
    free_think parsers all read; the shortest policy sends the next moves a turn allows, an
    answer the projection cannot read stays unreadable."""
    action, _ = project_answer(answer)
    if action == 0:
        return answer
    moves = list(shortest_solution(board))[:VAGEN_MOVES] if policy == "shortest" else [action]
    words = ",".join(ACTION_NAMES[move].capitalize() for move in moves)
    return (f"<observation>The board I see.</observation><think>I move {words}.</think><answer>{words}</answer>"
            f"<prediction>The board after {words}.</prediction>")


class _QuietServer(ThreadingHTTPServer):
    """Handler threads are daemons, and a client that gave up on a slow answer (its timeout)
    is expected here, not reported."""

    daemon_threads = True
    # the listen backlog: 32 clients connecting at once overflowed socketserver's default of 5 on a
    # loaded machine, and the benchmark's bare client, which does not retry, saw a connection error
    request_queue_size = 128

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def _error(message: str, kind: str = "BadRequestError") -> dict:
    return {"object": "error", "message": message, "type": kind, "param": None, "code": None}


def _handler(owner: LoopbackServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = 1 << 16  # headers and body leave in one write (flushed after each request): no Nagle wait
        disable_nagle_algorithm = True

        def log_message(self, *args):  # quiet: the tests read the results, not a request log
            pass

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 429:
                self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self) -> bool:
            key = owner.script.api_key
            if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
                self._send(401, _error("Unauthorized", "AuthenticationError"))
                return False
            return True

        def do_GET(self):
            if not self._authorised():
                return
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [
                    {"id": owner.script.model, "object": "model", "owned_by": "loopback"}]})
            else:
                self._send(404, _error("not found", "NotFoundError"))

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_REQUEST_BYTES:
                self._send(413, _error("request too large"))
                return
            body = self.rfile.read(length)
            if not self._authorised():
                return
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, _error("not found", "NotFoundError"))
                return
            try:
                result = owner.respond(json.loads(body))
            except (ValueError, KeyError, TypeError) as err:
                result = 400, _error(f"bad request: {err}")
            if result is None:
                self.close_connection = True  # dead: no answer
                return
            self._send(*result)

    return Handler


def main(argv: list[str] | None = None) -> int:
    """``demo-model``: serve a policy at http://127.0.0.1:PORT/v1 until Ctrl-C or SIGTERM."""
    parser = Parser(
        prog="python -m sokoban_tools demo-model",
        description="Serve a demo model on 127.0.0.1 through an OpenAI-compatible API, to try evaluate without a "
                    "GPU. It reads the board from the image (a text turn's grid) and answers in the format "
                    "verl-agent's projection reads, <think>...</think><action>up</action>, or in VAGEN's reply "
                    "format to VAGEN's requests.")
    parser.add_argument("--policy", choices=list(POLICIES), default="random",
                        help="how it answers: random (a uniform move; its success estimates the exact random "
                             "floor of fairness/baselines.json), shortest (solves every board), bad-answers (text the "
                             "projection cannot read), mixed (mostly shortest, some wasted moves and bad answers); "
                             "default: random")
    parser.add_argument("--port", type=_port_option, default=8000,
                        help="the port on 127.0.0.1 to listen on, 0 for any free one (default: 8000)")
    parser.add_argument("--model", default=DEMO_MODEL,
                        help=f"the name it serves, which evaluate's --model gives (default: {DEMO_MODEL})")
    parser.add_argument("--api-key", default=None,
                        help="refuse requests without this key (default: any request is answered)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    # Ctrl-C and SIGTERM only ask the loop below to stop, from before the server exists: a
    # KeyboardInterrupt raised between two lines (the banner printed, the loop not yet
    # entered, the server closing) would end the command with a traceback
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        server = LoopbackServer(Script(args.policy, model=args.model, api_key=args.api_key, keep=False), args.port)
    except OSError as err:
        print(f"error: cannot listen on 127.0.0.1:{args.port} ({err.strerror}); give another --port, or --port 0 "
              f"for a free one", file=sys.stderr)
        return 1
    print(f"demo model {args.model!r} (policy {args.policy}) serving at {server.base_url}; Ctrl-C stops it\n"
          f"evaluate it with: python -m sokoban_tools evaluate --base-url {server.base_url} --model {args.model} "
          f"--log runs/demo.jsonl", flush=True)
    try:
        while not stop.wait(0.2):  # polled: the signal's handler runs between two waits
            pass
    finally:
        server.close()
    print(f"demo model stopped after {server.requests} requests", flush=True)
    return 0
