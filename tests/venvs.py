"""What the loading-path tests share: second environments, client processes, dataset copies.

Helper for tests (not a test file).

* :func:`ensure_venv` creates a venv inside the repository the first time a test
  needs it (``.venv-datasets36`` for the last ``datasets`` release that runs
  loading scripts, ``.venv-olah`` for the Hub mirror) and reuses it afterwards.
  A fresh CI clone has neither, so the tests install them from the package
  registry (about 40 s each); :func:`require_venv` turns a failed install into
  skips with pip's reason, or failures under ``CI=true``.
* :func:`run_client` runs a short Python program in one of those environments
  and returns the JSON it reports, so one process start (and one ``import
  datasets``) serves several checks.
* :func:`published_copy` copies what a user downloads (card, script, renderer, data files)
  into a fresh directory; :data:`TAMPERINGS` replaces its validation file by a
  stale, truncated or modified one, :func:`special_copy` by a FIFO, a symlink to
  /dev/zero or a 3 GiB file, and :func:`refusal_parts` says what a refusal must name.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from hub_mirror import hub_env  # noqa: E402
from sokoban_fairness import PUBLISHED_FILES  # noqa: E402
from sokoban_tools.layout import HUB_REPO_ID  # noqa: E402

SCRIPT = "sokoban_fairness.py"
RENDERER = "sokoban_render.py"  # imported by the script, published beside it
# The script and the modules it imports from beside it (renderer, pins, file and row checks).
SCRIPT_FILES = (SCRIPT, RENDERER, "sokoban_pins.py", "sokoban_published.py")
CARD = "README.md"
EVALUATION = "fairness/evaluation.jsonl"
POOL = "fairness/evaluation-pool-1000.jsonl"


# ---------------------------------------------------------------------------
# Second environments
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Venv:
    """A venv at ``REPO/<directory>`` (or at ``directory`` itself when it is absolute, for
    a venv that must live outside the clone) holding ``requirements``; ``probe`` exits 0
    once it does."""

    directory: str
    requirements: tuple[str, ...]
    probe: str

    @property
    def python(self) -> Path:
        return REPO / self.directory / "bin" / "python"


DATASETS36 = Venv(
    ".venv-datasets36",
    ("datasets==3.6.0", "huggingface_hub<1", "numpy", "pillow"),
    "from importlib.metadata import version\n"
    "assert version('datasets') == '3.6.0', version('datasets')\n"
    "assert int(version('huggingface_hub').split('.')[0]) < 1, version('huggingface_hub')\n"
    "import numpy, PIL",
)
OLAH = Venv(
    ".venv-olah",
    ("olah==0.5.4",),
    "from importlib.metadata import version\nassert version('olah') == '0.5.4', version('olah')",
)


class VenvUnavailable(RuntimeError):
    """The venv could not be created or its packages not installed."""


def _works(venv: Venv) -> bool:
    if not venv.python.exists():
        return False
    return subprocess.run([str(venv.python), "-c", venv.probe], capture_output=True).returncode == 0


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def ensure_venv(venv: Venv) -> Path:
    """The venv's interpreter, after creating the venv and installing its packages if needed.

    Several test processes may ask at once (a lock file serialises them); an
    existing venv that already satisfies the probe is used as it is.
    """
    lock_path = Path(tempfile.gettempdir()) / (
        "sokoban-fairness-" + hashlib.sha256(str(REPO / venv.directory).encode()).hexdigest()[:16] + ".lock"
    )
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _works(venv):
            return venv.python
        steps = []
        if not venv.python.exists():
            base = shutil.which("python3") or sys.executable
            steps.append([base, "-m", "venv", str(REPO / venv.directory)])
        steps.append([str(venv.python), "-m", "pip", "install", "--quiet", *venv.requirements])
        for step in steps:
            try:
                done = subprocess.run(step, capture_output=True, text=True, timeout=1200)
            except subprocess.TimeoutExpired:
                raise VenvUnavailable(f"{' '.join(step)} took over 20 minutes") from None
            if done.returncode:
                raise VenvUnavailable(
                    f"`{' '.join(step)}` failed ({done.returncode}):\n{_tail(done.stdout + done.stderr)}"
                )
        if not _works(venv):
            raise VenvUnavailable(f"{venv.directory} still lacks {' '.join(venv.requirements)} after pip install")
        return venv.python


_outcomes: dict[Venv, Path | VenvUnavailable] = {}


def require_venv(venv: Venv) -> Path:
    """:func:`ensure_venv` for a fixture: the interpreter, or the test skipped (failed under
    ``CI=true``) with pip's reason.

    The outcome is kept, so a failed install is tried once per session, not per module.
    """
    from unavailable import unavailable

    if venv not in _outcomes:
        try:
            _outcomes[venv] = ensure_venv(venv)
        except VenvUnavailable as exc:
            _outcomes[venv] = exc
    outcome = _outcomes[venv]
    if isinstance(outcome, VenvUnavailable):
        unavailable(f"{venv.directory} could not be installed, so this path is untested: {outcome}")
    return outcome


def source_copy(directory: Path) -> Path:
    """What the wheel is built from, copied out of the clone into ``directory`` (created) so no
    stale build/ of the clone can leak into it: pyproject.toml, the readme, the packages and
    modules."""
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    tool = pyproject["tool"]["setuptools"]
    directory.mkdir(parents=True, exist_ok=True)
    for name in ["pyproject.toml", pyproject["project"]["readme"], *(f"{m}.py" for m in tool["py-modules"])]:
        shutil.copyfile(REPO / name, directory / name)
    packages = sorted({name.split(".")[0] for name in tool["packages"]["find"]["include"]})
    for folder in packages:
        shutil.copytree(REPO / folder, directory / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return directory


def build_wheel(source: Path, dist: Path) -> Path:
    """The wheel of the working tree (built from :func:`source_copy` in ``source``), in ``dist``.
    Raises VenvUnavailable if pip fails."""
    step = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(source_copy(source))]
    done = subprocess.run(step, capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise VenvUnavailable(f"`{' '.join(step)}` failed ({done.returncode}):\n{_tail(done.stdout + done.stderr)}")
    return next(dist.glob("*.whl"))


# ---------------------------------------------------------------------------
# Client processes
# ---------------------------------------------------------------------------

# Every client program starts with these helpers and ends with ``report(...)``.
_PRELUDE = '''
import json, sys

ARGS = json.loads(sys.argv[1])
HUB_REPO_ID = ARGS.pop("hub_repo_id")  # where the dataset lives (sokoban_tools.layout), for programs on the Hub

def chain(exc):
    """An exception and its causes, outermost first, as [{"type", "message"}]."""
    out, seen = [], set()
    while exc is not None and id(exc) not in seen and len(out) < 10:
        seen.add(id(exc))
        out.append({"type": type(exc).__name__, "message": str(exc)})
        exc = exc.__cause__ or exc.__context__
    return out

def attempt(function):
    """{"ok": result} or {"error": chain}."""
    try:
        return {"ok": function()}
    except Exception as exc:
        return {"error": chain(exc)}

def report(value):
    print("RESULT " + json.dumps(value))
'''


def run_client(python, program: str, args: dict | None = None, env: dict | None = None,
               timeout: float = 600) -> dict:
    """Run ``program`` (dedented, after the helpers above, with ``args`` as ``ARGS``) with
    ``python``; return what it reported."""
    code = _PRELUDE + textwrap.dedent(program)
    argv = [str(python), "-c", code, json.dumps({**(args or {}), "hub_repo_id": HUB_REPO_ID}, default=str)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir(), timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode or not lines:
        raise AssertionError(
            f"client exited with {done.returncode} without a report\n--- stdout\n{_tail(done.stdout, 30)}"
            f"\n--- stderr\n{_tail(done.stderr, 40)}"
        )
    return json.loads(lines[-1][len("RESULT "):])


def offline_env(hf_home) -> dict:
    """Environment for a client that reads local files only: its own caches, no network."""
    env = hub_env("http://127.0.0.1:9", hf_home)
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return env


# ---------------------------------------------------------------------------
# What a user downloads, intact or tampered
# ---------------------------------------------------------------------------

def published_names() -> list[str]:
    """The card, the loading script, the modules beside it and every data file the loaders read."""
    return [CARD, *SCRIPT_FILES, *PUBLISHED_FILES]


def published_copy(directory: Path) -> Path:
    """Copy the published files of the working tree into ``directory`` (created); return it."""
    for name in published_names():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, directory / name)
    return directory


def content_hash(root: Path) -> str:
    """A builder cache key for the script and data under ``root``: a builder used
    directly caches by name and config, so a changed file must change the key."""
    digest = hashlib.sha256()
    for name in published_names()[1:]:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes())
    return digest.hexdigest()[:16]


def _flip_a_seed_bit(data: bytes) -> bytes:
    # Bit 0 of a digit keeps it a digit, so the file stays valid JSON with 256 rows.
    at = data.index(b'"seed":') + len(b'"seed":')
    return data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]


def _first_lines(data: bytes, count: int) -> bytes:
    return b"".join(data.splitlines(keepends=True)[:count])


# name -> function of (evaluation.jsonl bytes, pool bytes) giving the file put in its place
TAMPERINGS = {
    "flipped_byte": lambda evaluation, pool: _flip_a_seed_bit(evaluation),
    "truncated_mid_line": lambda evaluation, pool: evaluation[: len(evaluation) // 2],
    "truncated_at_line": lambda evaluation, pool: _first_lines(evaluation, 128),
    "pool_in_place": lambda evaluation, pool: pool,
}


def tamper(root: Path, case: str) -> bytes:
    """Replace ``root/fairness/evaluation.jsonl`` as ``case`` says; return the new bytes."""
    data = TAMPERINGS[case]((REPO / EVALUATION).read_bytes(), (REPO / POOL).read_bytes())
    (root / EVALUATION).write_bytes(data)
    return data


def tampered_copy(directory: Path, case: str) -> Path:
    """A published copy in ``directory`` whose validation file is tampered as ``case`` says."""
    published_copy(directory)
    tamper(directory, case)
    return directory


def special_copy(root: Path, kind: str) -> Path:
    """A published copy whose validation file is replaced by something that is not what it seems."""
    published_copy(root)
    target = root / EVALUATION
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink_to_dev_zero":
        target.symlink_to("/dev/zero")
    else:  # a 3 GiB sparse file: refused by its size without reading a byte
        with open(target, "wb") as handle:
            handle.truncate(3 << 30)
    return root


def refusal_parts(found: bytes) -> tuple[str, ...]:
    """What the refusal of ``found`` in place of the evaluation file must name: the file,
    the fix, and both sizes (a wrong size is refused before reading) or, for a file of
    the published size, both digests and row counts."""
    expected = PUBLISHED_FILES[EVALUATION]
    if len(found) != expected["bytes"]:
        compared = (f"expected {expected['bytes']:,} bytes", expected["sha256"], f"found {len(found):,} bytes")
    else:
        rows = found.count(b"\n")
        compared = (expected["sha256"], f"{expected['rows']} rows", hashlib.sha256(found).hexdigest(), f"{rows} rows")
    return (EVALUATION, *compared, "force_redownload")
