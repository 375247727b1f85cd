"""``python -m sokoban_tools quickstart``: the card's first command, the main job end to end without a GPU.

It runs, in one process, the three commands a user runs against a model of their own,
printing each as it would be typed:

1. ``demo-model``: the demo model (:mod:`.demo_model`) on a free port of 127.0.0.1;
2. ``evaluate``: the 256 validation boards played against it as verl-agent's validation
   plays them, into an episode log and its run manifest;
3. ``score``: that log's success with its 95% interval, per stratum.

The demo model plays at random by default (a uniform move among the four), so its
success estimates the exact random floor the card states (``fairness/baselines.json``).
The log is the quick start's own: a second run replaces it, and only it; a log (or manifest)
that is not a demo model's evaluation is refused, never deleted.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ...help_text import Parser
from ...paths import error_text, read_bounded, unwritable
from ...records import strict_json
from ...records.episodes import LogInUse, episode_writer
from ...records.manifest import manifest_path
from .demo_model import DEMO_MODEL, POLICIES, LoopbackServer, Script

PROG = "python -m sokoban_tools"
DEFAULT_LOG = Path("runs/quickstart/demo-model.jsonl")


def _say(command: str, options: list[str], note: str = "") -> None:
    print(f"\n$ {PROG} {command} {shlex.join(options)}{note}", flush=True)


def not_the_quick_starts(log: Path) -> str | None:
    """Why the quick start may not replace what is at ``log`` (another run's evaluation, records
    without a manifest, a manifest that is not one), with the fix; ``None``: nothing there, or an
    earlier quick start's log (the demo model's evaluation, of any release), which it replaces."""
    manifest = manifest_path(log)
    fix = f"give the quick start another --log, or move {log} and {manifest.name} aside"
    if not manifest.exists():
        if log.exists() and log.stat().st_size:
            return f"--log {log}: holds episode records but no manifest, so it is no quick start's log; {fix}"
        return None
    try:
        found = strict_json.loads(read_bounded(manifest, 1 << 20, "run manifest").decode("utf-8"))
    except ValueError as err:  # PathError, a JSON or UTF-8 error
        return f"--log {log}: its manifest cannot be read ({err}), so it may be another run's; {fix}"
    settings = found.get("settings") if isinstance(found, dict) else None
    method = found.get("method") if isinstance(found, dict) else None
    model = settings.get("initial_weights.model") if isinstance(settings, dict) else None
    if not isinstance(method, str):
        return f"--log {log}: {manifest.name} beside it names no method, so it may be another run's; {fix}"
    if method != DEMO_MODEL or model != DEMO_MODEL:
        return (f"--log {log}: holds the evaluation of {method!r} (model {model!r}), not the demo model's, which "
                f"the quick start would replace; {fix}")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog=f"{PROG} quickstart", description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", choices=list(POLICIES), default="random",
                        help="the demo model's policy, as demo-model --policy takes it (default: random)")
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG,
                        help=f"the episode log to write, replaced if an earlier quick start wrote it (another "
                             f"run's log is refused, never deleted; default: {DEFAULT_LOG})")
    args = parser.parse_args(argv)
    problem = unwritable(args.log, "--log")
    if problem:
        parser.error(f"--log {problem}")
    from ...evaluation import score
    from . import evaluate

    try:
        with episode_writer(args.log):  # the log's lock first: another process may be writing that log
            problem = not_the_quick_starts(args.log)  # under the lock: no other run writes it meanwhile
            if problem:
                print(f"error: {problem}", file=sys.stderr)
                return 1
            for old in (args.log, manifest_path(args.log)):
                if old.is_file():
                    old.unlink()  # the quick start's own log, from an earlier run
            with LoopbackServer(Script(args.policy, keep=False)) as server:
                port = str(server.server.server_address[1])
                _say("demo-model", ["--policy", args.policy, "--port", port],
                     "   # here in this process, until evaluate ends")
                options = ["--base-url", server.base_url, "--model", DEMO_MODEL, "--log", str(args.log)]
                _say("evaluate", options)
                code = evaluate.main(options)  # the same writer: this process holds the lock
    except (OSError, ValueError) as err:  # another process writes the log (LogInUse); no place for a log or its lock
        print(f"error: {error_text(err)}", file=sys.stderr)
        return 1
    if code:
        return code
    _say("score", [str(args.log)])
    code = score.main([str(args.log)])
    if code == 0:
        print(f"\nNext: serve your own model (vLLM, llama.cpp, an API) and run the same evaluate and score "
              f"commands with its --base-url and --model (docs/evaluating.md).", flush=True)
    return code
