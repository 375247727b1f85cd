"""Serve a commit of a git repository as a Hub dataset repo on loopback, offline.

Helper for tests (not a test file).  ``serve_dataset_repo`` starts the
``olah`` Hub mirror as a subprocess on a free 127.0.0.1 port, in offline mode,
with a local git mirror of one commit as branch ``main``, and yields its URL
for ``HF_ENDPOINT`` (ready in about 1-2 s).  The server contacts no other host.

Install olah in its own venv (its FastAPI stack stays out of the test venv)::

    python3 -m venv .venv-olah
    .venv-olah/bin/pip install olah==0.5.4

and set ``OLAH_PYTHON=.venv-olah/bin/python`` (without it, the current
interpreter is used if it can import olah).  On disk it needs the ``git``
command and a git repository with at least one commit: only committed content
is served, no git LFS.

huggingface_hub and datasets read ``HF_ENDPOINT`` and ``HF_HOME`` when they are
imported, so run the clients in a subprocess with ``env=hub_env(url, hf_home)``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

from sokoban_tools.layout import HUB_REPO_ID

# Variables that would send clients offline, to another cache, or add a token.
_NOT_SET = (
    "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HF_TOKEN_PATH",
    "HUGGING_FACE_HUB_TOKEN", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_DATASETS_CACHE", "HF_XET_CACHE",
)


def hub_env(endpoint: str, hf_home: str | os.PathLike, base: dict | None = None) -> dict:
    """Environment for a client process that talks only to ``endpoint``."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _NOT_SET}
    env.update(
        HF_ENDPOINT=endpoint,
        HF_HOME=str(hf_home),
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_UPDATE_CHECK="1",  # `hf` would otherwise ask a package index
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HUB_DISABLE_XET="1",
    )
    return env


def _olah_python() -> str:
    python = os.environ.get("OLAH_PYTHON")
    if python:
        return python
    if importlib.util.find_spec("olah") is not None:
        return sys.executable
    raise RuntimeError(
        "olah is not installed: run `python3 -m venv .venv-olah && "
        ".venv-olah/bin/pip install olah==0.5.4` and set OLAH_PYTHON=.venv-olah/bin/python"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _git(*args: str, text: bool = True):
    done = subprocess.run(["git", *args], capture_output=True, text=text)
    if done.returncode:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip() if text else done.stdout


def _check_olah_can_list(mirror: Path) -> None:
    # olah 0.5.4 reads every 121-149 byte blob as text to spot LFS pointers; a binary
    # one makes its tree listing fail with HTTP 500, so refuse it here, clearly.
    for line in _git("-C", str(mirror), "ls-tree", "-r", "-l", "main").splitlines():
        meta, path = line.split("\t", 1)
        _, kind, blob, size = meta.split()
        if kind == "blob" and 120 < int(size) < 150:
            try:
                _git("-C", str(mirror), "cat-file", "blob", blob, text=False).decode("utf-8")
            except UnicodeDecodeError:
                raise RuntimeError(f"olah cannot serve {path}: a non-UTF-8 file of {size} bytes") from None


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def serve_dataset_repo(
    git_repo_dir: str | os.PathLike,
    repo_id: str = HUB_REPO_ID,
    revision: str = "HEAD",
    timeout: float = 60.0,
    tags: tuple[str, ...] = (),
) -> Iterator[str]:
    """Serve ``revision`` of ``git_repo_dir`` as dataset ``repo_id`` (branch ``main``, and
    tagged with each of ``tags``, as a release is).

    Yields the endpoint, e.g. ``http://127.0.0.1:41234``.  The server and its
    temporary files are removed on exit, whatever happens.
    """
    org, name = repo_id.split("/")
    with tempfile.TemporaryDirectory(prefix="hub-mirror-") as tmp:
        root = Path(tmp)
        # olah looks for <mirrors-path>/datasets/<org>/<name>, a git repo with a branch "main".
        mirror = root / "mirrors" / "datasets" / org / name
        mirror.mkdir(parents=True)
        _git("init", "-q", "--bare", "--initial-branch=main", str(mirror))
        _git("-C", str(mirror), "fetch", "-q", str(Path(git_repo_dir).resolve()), f"+{revision}:refs/heads/main")
        sha = _git("-C", str(mirror), "rev-parse", "main")
        for tag in tags:
            _git("-C", str(mirror), "tag", tag, sha)
        _check_olah_can_list(mirror)

        # Offline, olah resolves a branch name outside the git mirror (repo_info() without
        # a revision, a missing file on "main") from its response cache only: seed it.
        seed = root / "cache" / "api" / "datasets" / org / name / "revision" / "main"
        seed.mkdir(parents=True)
        body = json.dumps({"sha": sha, "lastModified": "2000-01-01T00:00:00+00:00"}).encode()
        for kind in ("head", "get"):
            (seed / f"meta_{kind}.json").write_text(json.dumps({"status_code": 200, "headers": {}, "content": body.hex()}))

        port = _free_port()
        netloc = f"127.0.0.1:{port}"
        config = root / "olah.toml"
        config.write_text(
            "[basic]\n"
            f'host = "127.0.0.1"\nport = {port}\n'
            f"repos-path = {json.dumps(str(root / 'cache'))}\n"
            f"mirrors-path = [{json.dumps(str(root / 'mirrors'))}]\n"
            'hf-scheme = "http"\nhf-netloc = "127.0.0.1:9"\nhf-lfs-netloc = "127.0.0.1:9"\n'
            f'mirror-scheme = "http"\nmirror-netloc = "{netloc}"\nmirror-lfs-netloc = "{netloc}"\n'
            "[accessibility]\noffline = true\n"
        )
        log_path = root / "server.log"
        with open(log_path, "wb") as log:
            server = subprocess.Popen(
                [_olah_python(), "-m", "olah.server", "-c", str(config), "--log-path", str(root / "logs")],
                cwd=tmp, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        try:
            endpoint = f"http://{netloc}"
            probe = f"{endpoint}/api/datasets/{repo_id}/revision/main"
            deadline = time.monotonic() + timeout
            while not _answers(probe):
                if server.poll() is not None or time.monotonic() > deadline:
                    state = f"exited with {server.returncode}" if server.poll() is not None else f"no answer in {timeout:.0f} s"
                    raise RuntimeError(f"hub mirror {state}; its log:\n{log_path.read_text(errors='replace')[-4000:]}")
                time.sleep(0.1)
            yield endpoint
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
