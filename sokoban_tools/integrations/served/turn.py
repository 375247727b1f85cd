"""One board played against a served model, turn by turn, as verl-agent's validation plays it.

An :class:`Episode` is shared by both modes; what a turn shows the model is its mode's:
the visual turn here (``rgb_array``), the text turn in :mod:`.text_turn`
(``tiny_rgb_array``). A visual turn of verl-agent's validation (``rollout_loop.preprocess_single_sample`` over
``SokobanEnvironmentManager`` in ``rgb_array`` mode) is one user message: the visual
prompt (:mod:`.prompt`) with the image where its ``<image>`` stands, and the image is
``process_image`` of the 96x96 frame: upscaled to at least ``256*256`` pixels with that
function's size arithmetic and Pillow's default resampling. Here the message is the
chat-completions form of the same thing: the prompt's text before and after the
placeholder around an ``image_url`` part holding that image as a PNG data URL
(lossless), so a server applying the model's own chat template builds verl-agent's prompt.

The answer goes through the runtime's projection (an unparseable one is action 0,
which spends a turn but moves nothing), the board through :class:`FairSokobanEnv`; an
episode ends at the environment's ``done`` or after ``max_steps`` turns, the length
of verl-agent's rollout loop, and its record is what the patched trainer logs.
"""

from __future__ import annotations

import base64
import hashlib
import math
from functools import lru_cache

import numpy as np
from PIL import Image

from sokoban_render import encode_png

from ...records.episodes import EpisodeRecord
from ...records.rows import BoardRow
from ...rules.board import Board
from ...runtime.env import FairSokobanEnv, render
from ...runtime.projection import project_answer
from .prompt import IMAGE_PLACEHOLDER, VISUAL_PROMPT
from .text_turn import TEXT_MODE, TextTurn

# process_image's bounds as verl-agent's rollout calls it (its defaults).
MIN_PIXELS = 256 * 256
MAX_PIXELS = 2048 * 2048
TEXT_BEFORE, TEXT_AFTER = VISUAL_PROMPT.split(IMAGE_PLACEHOLDER)
PNG_DATA_URL = "data:image/png;base64,"


def processed_size(width: int, height: int) -> tuple[int, int]:
    """The size ``process_image`` gives a ``width`` x ``height`` image: scaled down to at most
    :data:`MAX_PIXELS`, then up to at least :data:`MIN_PIXELS`, each time by the square root
    of the area ratio, sides truncated to integers (96x96 becomes 256x256)."""
    if width * height > MAX_PIXELS:
        width, height = _scaled(width, height, MAX_PIXELS)
    if width * height < MIN_PIXELS:
        width, height = _scaled(width, height, MIN_PIXELS)
    return width, height


def _scaled(width: int, height: int, area: int) -> tuple[int, int]:
    factor = math.sqrt(area / (width * height))
    return int(width * factor), int(height * factor)


def model_image(frame: np.ndarray) -> np.ndarray:
    """The image verl-agent hands its processor for the uint8 RGB ``frame``, as an array:
    resized to :func:`processed_size` with Pillow's default resampling (as ``process_image``
    calls ``Image.resize``), unchanged if no bound applies. (``process_image`` also scales
    an image whose pixels are all below 1 by 255; a rendered frame, walls always drawn, never is.)"""
    image = Image.fromarray(frame)
    size = processed_size(image.width, image.height)
    if size != image.size:
        image = image.resize(size)
    return np.asarray(image.convert("RGB"))


@lru_cache(maxsize=4096)
def image_url(board: Board) -> str:
    """The PNG data URL of :func:`model_image` of ``board``'s frame; positions repeat (a
    walk into a wall, an unparseable answer), so each is drawn and encoded once."""
    return PNG_DATA_URL + base64.b64encode(encode_png(model_image(render(board, "rgb_array")))).decode("ascii")


def user_message(board: Board) -> dict:
    """The one user message of a turn at ``board``: prompt text, image, prompt text."""
    return {"role": "user", "content": [
        {"type": "text", "text": TEXT_BEFORE},
        {"type": "image_url", "image_url": {"url": image_url(board)}},
        {"type": "text", "text": TEXT_AFTER},
    ]}


class VisualTurn:
    """The visual turn: the same prompt every turn, the image of the position; no history."""

    def message(self, board: Board) -> dict:
        return user_message(board)

    def played(self, board: Board, action: int) -> None:
        pass


VISUAL_MODE = "rgb_array"
MODES = (VISUAL_MODE, TEXT_MODE)


def request_seed(seed: int, task_id: str, turn: int) -> int:
    """The sampling seed of one request: a function of the evaluation's ``seed``, the board and
    the turn only, so a server honouring seeds replays a run whatever the concurrency."""
    digest = hashlib.sha256(f"{seed}/{task_id}/{turn}".encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class Episode:
    """One board from its stored start: :meth:`messages` for the next turn, :meth:`answer`
    with the model's text, until :attr:`done`; then :meth:`record`."""

    def __init__(self, row: BoardRow, max_steps: int, mode: str = VISUAL_MODE, history_length: int = 2):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.row = row
        self.max_steps = max_steps
        self.turn = VisualTurn() if mode == VISUAL_MODE else TextTurn(history_length)
        self.env = FairSokobanEnv(mode=mode, max_steps=max_steps)
        self.env.start(row)
        self.turns = 0
        self.done = False

    def messages(self) -> list[dict]:
        return [self.turn.message(self.env.board)]

    def answer(self, text: str) -> int:
        """Play the model's answer; returns the action it became."""
        if self.done:
            raise RuntimeError(f"{self.row.task_id}: the episode is over")
        action, _ = project_answer(text)
        self.turn.played(self.env.board, action)
        _, done, _ = self.env.play(action)
        self.turns += 1
        self.done = done or self.turns == self.max_steps
        return action

    def record(self, method: str, run: str, update: int, evaluation_sha256: str) -> EpisodeRecord:
        if not self.done:
            raise RuntimeError(f"{self.row.task_id}: the episode is not over")
        return self.env.tally.record(method, run, "validation", update, self.row.task_id, evaluation_sha256)
