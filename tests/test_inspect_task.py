"""The Inspect AI task against the demo model's real loopback server, and its logs converted.

The server (:mod:`sokoban_tools.integrations.served.demo_model`) keeps every request body it
answers. The same policy plays all 256 boards through ``evaluate`` and through the Inspect
task, in the visual and the text turn: every request is one user message, and the two runs
send the same requests (the text, the image's data URL byte for byte, the seed and the
decoding) and log the same records, the Inspect log once converted by ``inspect-log``.
``inspect eval`` typed as a user types it, from a clone (the task file) and by the package's
registered name (its entry point), solves every board with the shortest-path policy and
lands in the random floor's interval with the random one; a log of another task, an
unfinished run or a missing board is refused in one line naming the fix.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from conftest import REPO
from sokoban_tools.evaluation import score
from sokoban_tools.evaluation.replay import verify_log
from sokoban_tools.integrations.inspect_task import REGISTERED_TASK, TASK_FILE
from sokoban_tools.integrations.inspect_task.convert import main as inspect_log_main
from sokoban_tools.integrations.served.demo_model import LoopbackServer, Script
from sokoban_tools.integrations.served.evaluate import main as evaluate_main
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import manifest_path, read_manifest
from sokoban_tools.records.rows import DataError
from sokoban_tools.records.tasks import load_validation
from test_evaluate import poisson_binomial_interval
from unavailable import unavailable

MODEL = "sokoban-demo"
INSPECT_MODEL = f"openai-api/local/{MODEL}"  # Inspect's OpenAI-compatible provider, its service named local


def require_inspect(monkeypatch) -> None:
    try:
        import inspect_ai  # noqa: F401
        import openai  # noqa: F401
    except ImportError:
        unavailable("inspect-ai (the inspect extra) or openai is not installed")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("LOCAL_API_KEY", "EMPTY")  # the key Inspect's provider reads for the service local


@pytest.fixture(autouse=True)
def _inspect(monkeypatch):
    require_inspect(monkeypatch)


class RecordingServer(LoopbackServer):
    """The demo model's server, keeping every chat-completions request body it answered."""

    def __init__(self, script: Script):
        self.bodies: list[dict] = []
        super().__init__(script)

    def respond(self, body: dict):
        with self.lock:
            self.bodies.append(body)
        return super().respond(body)


def request(body: dict) -> str:
    """What a request asked, the transport aside: its one message (text, and the image's data
    URL, part by part), seed and decoding. An image part's ``detail`` (Inspect sends "auto",
    the server's default) is not part of the prompt."""
    (message,) = body["messages"]  # one fresh user message a turn, never a growing chat
    content = message["content"]
    parts = content if isinstance(content, str) else [
        part["text"] if part["type"] == "text" else part["image_url"]["url"] for part in content]
    return json.dumps({"role": message["role"], "content": parts,
                       **{key: body.get(key) for key in ("seed", "temperature", "top_p", "max_tokens", "n")}})


def run_inspect(base_url: str, log_dir: Path, mode: str, **options) -> Path:
    """The Inspect log of the task's pass over the 256 boards (or ``limit=N``) against ``base_url``."""
    from inspect_ai import eval as inspect_eval

    from sokoban_tools.integrations.inspect_task.task import sokoban_fairness

    (log,) = inspect_eval(sokoban_fairness(mode=mode), model=INSPECT_MODEL, model_base_url=base_url,
                          log_dir=str(log_dir), display="none", max_connections=16, **options)
    assert log.status == "success", log.error
    return Path(log.location)


def convert(capsys, inspect_log: Path, log: Path, *options: str) -> tuple[int, str, str]:
    code = inspect_log_main([str(inspect_log), "--log", str(log), *options])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["rgb_array", "tiny_rgb_array"])
def test_the_inspect_task_sends_evaluates_requests_and_logs_its_records_in_both_turns(tmp_path, capsys, mode):
    evaluated, converted = tmp_path / "evaluate.jsonl", tmp_path / "inspect.jsonl"
    # the mixed policy: mostly shortest paths, answers with and without a think block, wasted moves, bad text
    with RecordingServer(Script("mixed", keep=False)) as server:
        assert evaluate_main(["--base-url", server.base_url, "--model", MODEL, "--log", str(evaluated), "--mode",
                              mode, "--concurrency", "16", "--server-kind", "openai-api/local"]) == 0
        capsys.readouterr()
        by_evaluate, server.bodies = server.bodies, []
        inspect_log = run_inspect(server.base_url, tmp_path / "logs", mode)
        by_inspect = server.bodies
    assert len(by_inspect) == len(by_evaluate) > 256
    assert Counter(map(request, by_inspect)) == Counter(map(request, by_evaluate))
    code, out, err = convert(capsys, inspect_log, converted)
    assert code == 0 and err == "", err
    assert f"score it: python -m sokoban_tools score {converted}" in out
    ours, theirs = read_episodes(evaluated), read_episodes(converted)
    assert sorted(theirs, key=lambda r: r.task_id) == sorted(ours, key=lambda r: r.task_id)
    # the policy's unparseable answers (action 0) and lost boards are in both
    assert any("0" in record.moves for record in theirs) and 0 < sum(r.won for r in theirs) < 256
    manifest, reference = read_manifest(manifest_path(converted)), read_manifest(manifest_path(evaluated))
    assert manifest["settings"] == reference["settings"]  # the same played settings, so compare finds none differ
    notes = manifest["notes"]
    assert (notes["inspect_model"], notes["provider"], notes["base_url"]) == (
        INSPECT_MODEL, "openai-api/local", server.base_url)
    assert notes["inspect_log"] == inspect_log.name and "Inspect AI 0.3" in notes["evaluator"]
    assert manifest["costs"]["requests"]["value"] == reference["costs"]["requests"]["value"] == len(by_inspect)
    assert score.score([converted])["groups"][0]["wins"] == sum(r.won for r in ours)
    assert verify_log(converted).verified == 256


def inspect_command() -> list[str]:
    """``inspect`` as a user types it: the console script beside this interpreter (or on the path)."""
    beside = Path(sys.executable).with_name("inspect")
    found = str(beside) if beside.exists() else shutil.which("inspect")
    return [found] if found else [sys.executable, "-m", "inspect_ai"]


def entry_point_folder(tmp_path: Path) -> Path:
    """A folder whose distribution metadata declares the package's ``inspect_ai`` entry point as
    pyproject.toml declares it, as an install of the package does (the clone may run uninstalled)."""
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    info = tmp_path / "site" / "sokoban_fairness_entry_points-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sokoban-fairness-entry-points\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[inspect_ai]\n" + "".join(
        f"{name} = {target}\n" for name, target in declared["inspect_ai"].items()))
    return info.parent


def inspect_eval(tmp_path: Path, task: str, base_url: str, *options: str, model: str = INSPECT_MODEL
                 ) -> tuple[subprocess.CompletedProcess, Path]:
    """``inspect eval TASK --model ...`` from the clone; its result and the log it wrote."""
    logs = tmp_path / "logs"
    env = {**os.environ, "LOCAL_API_KEY": "EMPTY",
           "PYTHONPATH": os.pathsep.join([str(entry_point_folder(tmp_path)), str(REPO),
                                          *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([*inspect_command(), "eval", task, "--model", model, "--model-base-url", base_url,
                           "--log-dir", str(logs), "--display", "plain", "--max-connections", "16", *options],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (log,) = logs.glob("*.eval")
    return done, log


@pytest.mark.slow
def test_inspect_eval_of_the_task_file_solves_every_board_with_the_shortest_path_model(tmp_path, capsys):
    with LoopbackServer(Script("shortest", keep=False)) as server:
        done, inspect_log = inspect_eval(tmp_path, TASK_FILE, server.base_url)
    assert "success" in done.stdout and "1.000" in done.stdout
    code, out, err = convert(capsys, inspect_log, tmp_path / "shortest.jsonl")
    assert code == 0, err
    assert out.startswith(f"{MODEL} (seed0): 256/256 boards won (100.0%)")
    assert score.score([tmp_path / "shortest.jsonl"])["groups"][0]["wins"] == 256


@pytest.mark.slow
def test_inspect_eval_by_the_registered_name_lands_the_random_model_in_its_floors_interval(tmp_path, capsys):
    with LoopbackServer(Script("random", keep=False)) as server:
        _, inspect_log = inspect_eval(tmp_path, REGISTERED_TASK, server.base_url)
    log = tmp_path / "random.jsonl"
    code, out, err = convert(capsys, inspect_log, log)
    assert code == 0, err
    baselines = json.loads((REPO / "fairness" / "baselines.json").read_text(encoding="utf-8"))
    probabilities = [float(Fraction(b["moves_1_4"]["success"]["exact"]))
                     for b in baselines["splits"]["validation"]["boards"]]
    low, high = poisson_binomial_interval(probabilities, 0.999)
    records = read_episodes(log)
    wins = sum(record.won for record in records)
    assert len(records) == 256 and low <= wins <= high, (wins, low, high)
    # the exact floor lies in the exact interval the task's scorer reports, and in score's
    from inspect_ai.log import read_eval_log
    metrics = read_eval_log(str(inspect_log), header_only=True).results.scores[0].metrics
    floor = float(Fraction(baselines["splits"]["validation"]["overall"]["moves_1_4"]["success"]["exact"]))
    assert metrics["success"].value == wins / 256
    assert metrics["ci95_low"].value <= floor <= metrics["ci95_high"].value, (metrics, floor)
    group = score.score([log])["groups"][0]
    assert group["ci95"][0] <= floor <= group["ci95"][1], (group, floor)


def refused_in_one_line(code: int, err: str, *words: str) -> None:
    assert code == 1 and err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert all(word in err for word in words), err


@pytest.fixture(scope="module")
def quick_look(tmp_path_factory) -> Path:
    """The Inspect log of ``--limit 3`` against the shortest-path model."""
    folder = tmp_path_factory.mktemp("quick-look")
    with pytest.MonkeyPatch.context() as monkeypatch, LoopbackServer(Script("shortest", keep=False)) as server:
        require_inspect(monkeypatch)
        return run_inspect(server.base_url, folder / "logs", "rgb_array", limit=3)


def edited(quick_look: Path, folder: Path, change) -> Path:
    """A copy of the quick look's Inspect log with ``change`` made to it."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(quick_look))
    change(log)
    path = folder / "edited.eval"
    write_eval_log(log, str(path))
    return path


def test_a_limit_run_converts_as_a_quick_look_that_score_refuses_naming_the_fix(quick_look, tmp_path, capsys):
    log = tmp_path / "quick.jsonl"
    code, out, err = convert(capsys, quick_look, log, "--method", "demo", "--run", "r1")
    assert code == 0, err
    assert "3/3 boards won" in out and "a quick look, not the protocol" in out
    first = [row.task_id for row in load_validation(REPO / "fairness" / "evaluation.jsonl")[:3]]
    assert [(r.method, r.run, r.task_id) for r in read_episodes(log)] == [("demo", "r1", task) for task in first]
    assert "NOT the protocol" in read_manifest(manifest_path(log))["notes"]["boards"]
    with pytest.raises(DataError, match=r"an `inspect eval --limit 3` quick look.*without --limit"):
        score.score([log])
    code, _, err = convert(capsys, quick_look, log)  # never over a log that holds records
    refused_in_one_line(code, err, "give a new --log")


@pytest.mark.parametrize("change,words", [
    (lambda log: setattr(log, "samples", log.samples[1:]), ("misses 1 of its 3 boards", "eval-0002", "eval-retry")),
    (lambda log: setattr(log, "status", "error"), ("status is 'error'", "inspect eval-retry")),
    (lambda log: log.samples[0].store["sokoban_fairness_episode"].update(moves="L", won=True),
     ("replaying its moves 'L'", "run the task again")),
    (lambda log: log.samples[1].store.clear(), ("holds no episode",)),
    (lambda log: log.eval.metadata.clear(), ("not of sokoban_tools/sokoban_fairness", "inspect eval")),
], ids=["a missing board", "an unfinished run", "edited moves", "no episode", "another task"])
def test_a_log_that_is_not_a_finished_pass_of_this_task_is_refused_in_one_line(quick_look, tmp_path, capsys,
                                                                                  change, words):
    log = tmp_path / "out.jsonl"
    code, _, err = convert(capsys, edited(quick_look, tmp_path, change), log)
    refused_in_one_line(code, err, *words)
    assert not log.exists() and not manifest_path(log).exists()  # checked before anything is written


def test_a_log_of_another_inspect_task_or_no_inspect_log_is_refused_in_one_line(quick_look, tmp_path, capsys):
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    (other,) = inspect_eval(Task(dataset=[Sample(input="What is 1+1?", target="2")], solver=generate(),
                                 scorer=match(), name="arithmetic"), model="mockllm/model",
                            log_dir=str(tmp_path / "logs"), display="none")
    code, _, err = convert(capsys, Path(other.location), tmp_path / "out.jsonl")
    refused_in_one_line(code, err, "task 'arithmetic'", "not of sokoban_tools/sokoban_fairness")
    episode_log = tmp_path / "episodes.jsonl"
    assert convert(capsys, quick_look, episode_log)[0] == 0
    code, _, err = convert(capsys, episode_log, tmp_path / "again.jsonl")
    refused_in_one_line(code, err, "is not an Inspect log")
    code, _, err = convert(capsys, tmp_path / "nowhere.eval", tmp_path / "again.jsonl")
    refused_in_one_line(code, err, "no such file")
    assert not (tmp_path / "again.jsonl").exists()


@pytest.mark.slow
def test_smollm2_on_llama_cpps_server_plays_a_board_through_inspects_openai_compatible_provider(tmp_path, capsys):
    from sokoban_tools.pipeline.publish.real_model import MODEL as REAL_MODEL, LlamaServer, Unavailable

    try:
        server = LlamaServer(tmp_path / "server.log")
    except Unavailable as missing:
        unavailable(str(missing))
    with server:
        # the protocol's decoding (the task's defaults), the text turn; one request at a time, as it answers them
        done, inspect_log = inspect_eval(tmp_path, TASK_FILE, server.base_url, "--limit", "1", "-T",
                                         "mode=tiny_rgb_array", "--max-connections", "1", "--timeout", "1800",
                                         model=f"openai-api/local/{REAL_MODEL}")
    log = tmp_path / "smollm2.jsonl"
    code, out, err = convert(capsys, inspect_log, log, "--server-kind", "llama.cpp")
    assert code == 0, err
    (record,) = read_episodes(log)
    assert (record.task_id, record.method, record.phase) == ("eval-0002", REAL_MODEL, "validation")
    assert 0 <= record.actions <= len(record.moves) <= 15 and (len(record.moves) == 15 or record.won)
    assert verify_log(log).verified == 1
    manifest = read_manifest(manifest_path(log))
    settings, costs, notes = manifest["settings"], manifest["costs"], manifest["notes"]
    assert (settings["image_processing.observation"], settings["image_processing.history_length"]) == (
        "tiny_rgb_array", 2)
    assert settings["decoding.validation.temperature"] == 0.4 and settings["decoding.validation.response_length"] == 512
    assert (notes["server_kind"], notes["provider"]) == ("llama.cpp", "openai-api/local")
    turns = costs["requests"]["value"]
    assert turns == len(record.moves)
    # llama.cpp counted the prompts with the model's tokenizer and chat template: a text turn is hundreds of tokens
    assert 300 * turns <= costs["prompt_tokens"]["value"] <= 1024 * turns
    assert costs["completion_tokens"]["value"] >= turns
    with pytest.raises(DataError, match=r"an `inspect eval --limit 1` quick look"):
        score.score([log])
