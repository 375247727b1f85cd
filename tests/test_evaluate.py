"""``python -m sokoban_tools evaluate`` with the real ``openai`` client against a real loopback server.

The server (:mod:`sokoban_tools.integrations.served.demo_model`) sees only the
requests: its scripted model reads each board from the image's pixels and plays a
shortest path, a seeded random move, malformed text, slowly, through 429/500 bursts,
or dies. Here: the shortest-path model wins every board and the random one lands in
its exact baseline's interval (full passes); the episodes equal those of verl-agent's
own validation loop with the project's patch, turn inputs included; a run killed at a
random point resumes to a clean run's records; every failure no retry mends stops
with one line, and writes nothing it should not.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from fractions import Fraction
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from answering_server import AnsweringServer
from conftest import REPO
from sokoban_tools.evaluation import compare, score
from sokoban_tools.integrations.served import evaluate as served_evaluate
from sokoban_tools.integrations.served.client import ServedModel
from sokoban_tools.integrations.served.evaluate import main as evaluate_main
from sokoban_tools.integrations.served.prompt import UPSTREAM_COMMIT, VISUAL_PROMPT
from sokoban_tools.integrations.served.turn import request_seed
from sokoban_tools.integrations.served.demo_model import LoopbackServer, Script
from sokoban_tools.evaluation.replay import verify_log
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import manifest_path, read_manifest
from sokoban_tools.records.rows import DataError
from sokoban_tools.records.tasks import load_validation
from test_verl_agent_patched_trainer import patched_copy
from unavailable import unavailable

ROWS = load_validation(REPO / "fairness" / "evaluation.jsonl")
SERVED_RUNNER = Path(__file__).resolve().parent / "verl_agent_served_run.py"
MODEL = "sokoban-demo"


@pytest.fixture(autouse=True)
def _client(monkeypatch):
    try:
        import openai  # noqa: F401
    except ImportError:
        unavailable("the openai package (the evaluate extra) is not installed")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def evaluate(capsys, base_url: str, log: Path, *options: str, model: str = MODEL) -> tuple[int, str, str]:
    """``evaluate``'s exit code, stdout and stderr, run in this process."""
    code = evaluate_main(["--base-url", base_url, "--model", model, "--log", str(log), "--backoff", "0.01",
                          *options])
    out, err = capsys.readouterr()
    return code, out, err


def outcomes(log: Path) -> dict[str, tuple]:
    """Each board's (won, actions, return) in the log, refusing a board logged twice."""
    records = read_episodes(log)
    found = {r.task_id: (r.won, r.actions, r.episode_return) for r in records}
    assert len(found) == len(records), "a board was logged twice"
    return found


def stopped_with_one_line(code: int, err: str, *words: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert all(word in lines[0] for word in words), lines[0]


@pytest.mark.slow
def test_shortest_path_model_wins_all_256_boards_in_the_trainers_format(tmp_path, capsys):
    log = tmp_path / "shortest.jsonl"
    with LoopbackServer(Script("shortest")) as server:
        # a quick look first, then the rest of the pass by --resume
        code, out, err = evaluate(capsys, server.base_url, log, "--boards", "5", "--revision", "abc123")
        assert code == 0 and "NOT the protocol" in read_manifest(manifest_path(log))["notes"]["boards"], err
        code, out, err = evaluate(capsys, server.base_url, log, "--concurrency", "16", "--revision", "abc123",
                                  "--resume")
    assert code == 0, err
    lengths = {row.task_id: len(row.shortest_solution) for row in ROWS}
    assert outcomes(log) == {task: (True, n, pytest.approx(11 - 0.1 * n)) for task, n in lengths.items()}
    assert score.score([log])["groups"][0]["wins"] == 256
    # one request per turn, one user message of verl-agent's prompt around a 256x256 image,
    # the launcher's validation decoding and a seed of (evaluation seed, board, turn)
    assert server.requests == len(server.seen) == sum(lengths.values())
    assert {seen.text for seen in server.seen} == {VISUAL_PROMPT}
    assert {seen.image_shape for seen in server.seen} == {(256, 256, 3)}
    assert {json.dumps(seen.sampling, sort_keys=True) for seen in server.seen} == {
        json.dumps({"temperature": 0.4, "top_p": 1.0, "max_tokens": 512, "n": 1}, sort_keys=True)}
    assert Counter(seen.seed for seen in server.seen) == Counter(
        request_seed(0, task, turn) for task, n in lengths.items() for turn in range(n))
    manifest = read_manifest(manifest_path(log))
    settings = manifest["settings"]
    assert (settings["initial_weights.model"], settings["initial_weights.revision"]) == (MODEL, "abc123")
    assert (settings["image_processing.observation"], settings["action_horizon"]) == ("rgb_array", 15)
    assert settings["decoding.validation.temperature"] == 0.4 and settings["decoding.validation.do_sample"]
    assert manifest["costs"]["requests"]["value"] == server.requests
    assert manifest["costs"]["prompt_tokens"]["value"] > 0 and manifest["costs"]["wall_time"]["value"] > 0
    assert manifest["notes"]["server_kind"] == "loopback"
    assert manifest["notes"]["boards"] == "all 256 validation boards (the protocol)"
    assert manifest["notes"]["protocol_settings"] == "verl-agent's validation settings"
    assert f"score {log}" in out


def poisson_binomial_interval(probabilities: list[float], mass: float) -> tuple[int, int]:
    """The central ``mass`` interval of the number of successes of independent trials."""
    distribution = np.zeros(len(probabilities) + 1)
    distribution[0] = 1.0
    for p in probabilities:
        distribution[1:] = distribution[1:] * (1 - p) + distribution[:-1] * p
        distribution[0] *= 1 - p
    cumulative = np.cumsum(distribution)
    tail = (1 - mass) / 2
    return int(np.searchsorted(cumulative, tail)), int(np.searchsorted(cumulative, 1 - tail))


@pytest.mark.slow
def test_random_model_succeeds_within_its_exact_baselines_interval(tmp_path, capsys):
    log = tmp_path / "random.jsonl"
    with LoopbackServer(Script("random", keep=False)) as server:
        code, _, err = evaluate(capsys, server.base_url, log, "--concurrency", "16")
    assert code == 0, err
    baselines = json.loads((REPO / "fairness" / "baselines.json").read_text(encoding="utf-8"))
    boards = baselines["splits"]["validation"]["boards"]
    probabilities = [float(Fraction(b["moves_1_4"]["success"]["exact"])) for b in boards]
    low, high = poisson_binomial_interval(probabilities, 0.999)
    found = outcomes(log)
    wins = sum(won for won, _, _ in found.values())
    assert len(found) == 256 and low <= wins <= high, (wins, low, high)
    assert all(actions == 15 for won, actions, _ in found.values() if not won)  # every answer is a move
    assert verify_log(log).verified == 256  # every record's moves replay to its outcome, actions and return


@pytest.mark.slow
@pytest.mark.parametrize("mode,history", [("rgb_array", 2), ("tiny_rgb_array", 2), ("tiny_rgb_array", 0)])
def test_records_and_turn_inputs_equal_those_of_verl_agents_own_validation_loop(tmp_path, capsys, mode, history):
    tree = patched_copy(tmp_path / "verl-agent")
    assert (tree / "UPSTREAM_COMMIT").read_text(encoding="utf-8").strip() == UPSTREAM_COMMIT  # the prompt's source
    work = tmp_path / "work"
    work.mkdir()
    runner = subprocess.Popen([sys.executable, str(SERVED_RUNNER), json.dumps(
        {"tree": str(tree), "work": str(work), "mode": mode, "history_length": history})],
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    trainer_manifest = manifest_path(work / "trainer.jsonl")
    deadline = time.monotonic() + 300
    while not trainer_manifest.exists() and runner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)  # make_envs writes it before the first board; the evaluation runs beside the loop
    log = tmp_path / "served.jsonl"
    with LoopbackServer(Script("mixed")) as server:
        code, _, err = evaluate(capsys, server.base_url, log, "--concurrency", "8", "--method", "served",
                                "--settings-from", str(trainer_manifest), "--mode", mode,
                                "--history-length", str(history))
    out, runner_err = runner.communicate(timeout=600)
    assert runner.returncode == 0, runner_err[-3000:]
    assert code == 0, err
    report = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[len("RESULT "):])
    theirs = outcomes(Path(report["log"]))
    ours = outcomes(log)
    assert ours == theirs and len(ours) == 256
    assert 0 < sum(won for won, _, _ in ours.values()) < 256  # the policy loses some boards: both paths are tried
    # every turn's input: build_text_obs's text and process_image's pixels, as verl-agent's loop made them
    sent = Counter((seen.text, seen.image_sha256, seen.image_shape, seen.answer) for seen in server.seen)
    made = Counter((text, digest, tuple(shape), answer) for text, digest, shape, answer in report["inputs"])
    assert sent == made
    texts = {text for text, *_ in report["inputs"]}
    if mode == "rgb_array":
        assert texts == {VISUAL_PROMPT}
    else:  # every board's own grid; with history, SimpleMemory's lines after the first turn
        assert all(seen.image_shape == () for seen in server.seen) and len(texts) > 256
        with_history = [text for text in texts if "Prior to this step, you have already taken" in text]
        assert bool(with_history) == (history > 0)
        assert any("Action 2: '" in text and "Observation 1" not in text for text in with_history) == (history > 0)
    # the trainer's own validation and the served evaluation compare with one intended difference
    comparison = compare.compare([log], [Path(report["log"])], allowed=["initial_weights.model"])
    assert comparison["settings"]["checked"]
    assert [d["key"] for d in comparison["settings"]["allowed_differences"]] == ["initial_weights.model"]
    assert comparison["updates"][0]["difference"] == 0.0


@pytest.mark.slow
def test_a_run_killed_at_a_random_point_resumes_to_the_records_of_a_clean_run(tmp_path, capsys):
    boards = 40
    clean, killed = tmp_path / "clean.jsonl", tmp_path / "killed.jsonl"
    kill_at = random.Random().randint(1, boards - 2)
    with LoopbackServer(Script("random", keep=False, delay=0.01)) as server:
        code, _, err = evaluate(capsys, server.base_url, clean, "--boards", str(boards))
        assert code == 0, err
        command = [sys.executable, "-m", "sokoban_tools", "evaluate", "--base-url", server.base_url, "--model", MODEL,
                   "--log", str(killed), "--boards", str(boards), "--concurrency", "4"]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            if killed.exists() and killed.read_bytes().count(b"\n") >= kill_at:
                break
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
        process.communicate()
        assert process.returncode == -signal.SIGKILL, f"the run ended before the kill at {kill_at} boards"
        played = len(read_episodes(killed))
        assert kill_at <= played < boards, (kill_at, played)
        code, _, err = evaluate(capsys, server.base_url, killed, "--boards", str(boards), "--resume")
    assert code == 0, f"kill after {kill_at} boards: {err}"
    assert f"resuming: {played} of {boards}" in err
    assert outcomes(killed) == outcomes(clean), f"kill after {kill_at} boards"
    # a resumed run finished is left alone; one line cut by an interrupted write is played again
    with open(killed, "ab") as handle:
        handle.write(b'{"method":"loopback-vl","run":"se')
    with LoopbackServer(Script("random", keep=False)) as server:
        code, _, err = evaluate(capsys, server.base_url, killed, "--boards", str(boards), "--resume")
    assert code == 0 and "moved 0 record(s) and a torn last line" in err and server.requests == 0
    assert outcomes(killed) == outcomes(clean)
    [aside] = [path for path in tmp_path.iterdir() if path.name.startswith(killed.name + ".aside-")]
    assert aside.read_bytes() == b'{"method":"loopback-vl","run":"se\n'  # kept, not deleted


def test_resume_refuses_a_damaged_log_before_changing_a_byte_of_it(tmp_path, capsys):
    log = tmp_path / "not-a-log.jsonl"
    log.write_bytes(b"line one\n\xff\xfe binary without a final newline")
    before = log.read_bytes()
    with LoopbackServer(Script("random", keep=False)) as server:
        code, _, err = evaluate(capsys, server.base_url, log, "--boards", "2", "--resume")
        assert server.requests == 0
    assert code == 1 and err.startswith("error: ") and str(log) in err
    assert log.read_bytes() == before and sorted(tmp_path.iterdir()) == [log]


def test_429_and_5xx_bursts_and_timeouts_are_retried_and_change_no_record(tmp_path, capsys):
    clean, busy = tmp_path / "clean.jsonl", tmp_path / "busy.jsonl"
    with LoopbackServer(Script("random", keep=False)) as server:
        assert evaluate(capsys, server.base_url, clean, "--boards", "12")[0] == 0
    failures = {1: 429, 2: 429, 3: 500, 4: 503, 20: 502, 21: 429, 22: 500}
    with LoopbackServer(Script("random", keep=False, fail=failures, slow={30: 1.5})) as server:
        code, _, err = evaluate(capsys, server.base_url, busy, "--boards", "12", "--timeout", "0.5")
    assert code == 0, err
    assert outcomes(busy) == outcomes(clean)
    costs = read_manifest(manifest_path(busy))["costs"]
    answered = read_manifest(manifest_path(clean))["costs"]["requests"]["value"]
    assert costs["requests"]["value"] == answered
    # every failure and the timed-out request were retried (a loaded machine may time out more)
    assert costs["retried_requests"]["value"] >= len(failures) + 1
    assert server.requests == answered + costs["retried_requests"]["value"]


def test_malformed_answers_are_lost_episodes_and_a_subset_is_labelled_not_the_protocol(tmp_path, capsys):
    log = tmp_path / "malformed.jsonl"
    with LoopbackServer(Script("bad-answers", keep=False)) as server:
        code, out, err = evaluate(capsys, server.base_url, log, "--boards", "6")
    assert code == 0, err
    assert outcomes(log) == {row.task_id: (False, 0, pytest.approx(-1.5)) for row in ROWS[:6]}
    assert {r.moves for r in read_episodes(log)} == {"0" * 15}  # an unparseable answer is move 0
    assert verify_log(log).verified == 6
    assert server.requests == 6 * 15
    assert "not the protocol" in out and "NOT the protocol" in read_manifest(manifest_path(log))["notes"]["boards"]
    with pytest.raises(DataError, match="misses 250 of the 256"):
        score.score([log])


def test_settings_cut_from_verl_agents_are_named_in_the_manifest_and_the_output(tmp_path, capsys):
    cut = tmp_path / "cut.jsonl"
    visual = tmp_path / "visual.jsonl"
    with LoopbackServer(Script("bad-answers", keep=False)) as server:
        code, out, err = evaluate(capsys, server.base_url, cut, "--boards", "2", "--mode", "tiny_rgb_array",
                                  "--history-length", "0", "--max-tokens", "32")
        assert code == 0, err
        visual_code, visual_out, visual_err = evaluate(capsys, server.base_url, visual, "--boards", "1",
                                                       "--history-length", "0")
    differences = "data.max_response_length 32 (verl-agent: 512); env.history_length 0 (verl-agent: 2)"
    assert read_manifest(manifest_path(cut))["notes"]["protocol_settings"] == (
        f"NOT verl-agent's validation settings: {differences}")
    assert differences in out
    assert visual_code == 0, visual_err  # a visual prompt shows no history, whatever env.history_length says
    assert read_manifest(manifest_path(visual))["notes"]["protocol_settings"] == "verl-agent's validation settings"
    assert "not verl-agent's" not in visual_out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("case", ["refused connection", "https to a plain-HTTP server", "wrong key", "unknown model",
                                  "no image input", "retries run out", "prompt too long"])
def test_failures_no_retry_mends_stop_at_once_with_one_line(tmp_path, capsys, case):
    log = tmp_path / "log.jsonl"
    script, options, words = Script("shortest", keep=False), [], []
    if case == "wrong key":
        script.api_key, words = "sekret", ["refused the API key", "401"]
    elif case == "unknown model":
        options, words = ["--model", "no-such-model"], ["does not serve the model 'no-such-model'"]
    elif case == "no image input":
        script.images, words = False, ["refused the image", "vision-language model"]
    elif case == "retries run out":
        script.fail, options, words = {n: 500 for n in range(1, 50)}, ["--retries", "2"], ["kept failing", "--resume"]
    elif case == "prompt too long":
        options, words = ["--max-prompt-length", "100"], ["prompt tokens", "--max-prompt-length 100"]
    elif case == "https to a plain-HTTP server":
        words = ["answered the TLS handshake in plain HTTP", "does not serve https; give --base-url http://127.0.0.1:"]
    else:
        words = ["cannot connect", "start the server"]
    with LoopbackServer(script) as server:
        url = f"http://127.0.0.1:{free_port()}/v1" if case == "refused connection" else server.base_url
        if case.startswith("https"):
            url = url.replace("http://", "https://", 1)
        code, _, err = evaluate(capsys, url, log, "--boards", "4", *options)
    stopped_with_one_line(code, err, *words)
    if case.startswith("https"):
        assert f"give --base-url {server.base_url}" in err and "Connection error." not in err
    assert not log.exists() or read_episodes(log) == []
    if case in ("refused connection", "https to a plain-HTTP server", "wrong key", "unknown model"):
        # refused before anything is written
        assert not manifest_path(log).exists()


def test_the_key_comes_from_the_named_variable_and_is_written_nowhere(tmp_path, capsys, monkeypatch):
    log = tmp_path / "keyed.jsonl"
    monkeypatch.setenv("LOOPBACK_KEY", "sekret-key-123")
    with LoopbackServer(Script("shortest", keep=False, api_key="sekret-key-123")) as server:
        code, _, err = evaluate(capsys, server.base_url, log, "--boards", "3", "--api-key-env", "LOOPBACK_KEY")
        assert code == 0, err
        code, _, err = evaluate(capsys, server.base_url, tmp_path / "other.jsonl", "--boards", "3",
                                "--api-key-env", "UNSET_KEY_VARIABLE")
    stopped_with_one_line(code, err, "UNSET_KEY_VARIABLE")
    assert all(b"sekret" not in path.read_bytes() for path in tmp_path.iterdir())


class PausingStop(threading.Event):
    """A stop whose first ``set`` returns only after a pause: the thread that stops the run
    finishes after the requests it stopped, as it can on a busy machine."""

    def set(self) -> None:
        first = not self.is_set()
        super().set()
        if first:
            time.sleep(1.0)


def test_the_failure_that_stopped_the_run_is_named_not_a_request_it_stopped(tmp_path, capsys, monkeypatch):
    """Request 1 gets a 503 and waits to retry; request 2 is refused (401), which stops the run and
    ends that wait. The waiting request fails because the run stopped and finishes first; the
    line must still name the 401 (under CPU burners it said only "error: stopped")."""
    monkeypatch.setattr(served_evaluate, "ServedModel", partial(ServedModel, stop=PausingStop()))
    with LoopbackServer(Script("random", keep=False, fail={1: 503, 2: 401})) as server:
        code, _, err = evaluate(capsys, server.base_url, tmp_path / "log.jsonl", "--boards", "2", "--concurrency",
                                "2", "--backoff", "30")
    stopped_with_one_line(code, err, "refused the API key")


def test_a_server_dying_mid_run_stops_it_and_resume_on_a_new_server_finishes_it(tmp_path, capsys):
    clean, log = tmp_path / "clean.jsonl", tmp_path / "log.jsonl"
    with LoopbackServer(Script("random", keep=False)) as server:
        assert evaluate(capsys, server.base_url, clean, "--boards", "16")[0] == 0
    with LoopbackServer(Script("random", keep=False, die_after=60)) as server:
        code, _, err = evaluate(capsys, server.base_url, log, "--boards", "16", "--concurrency", "4")
    stopped_with_one_line(code, err, "cannot connect")
    assert "--resume" in err
    partial = outcomes(log)
    assert 0 < len(partial) < 16
    with LoopbackServer(Script("random", keep=False)) as server:
        code, _, err = evaluate(capsys, server.base_url, log, "--boards", "16")
        stopped_with_one_line(code, err, "already holds", "--resume")  # never played twice by mistake
        code, _, err = evaluate(capsys, server.base_url, log, "--boards", "16", "--resume")
    assert code == 0, err
    assert outcomes(log) == outcomes(clean)



def test_a_log_that_cannot_be_written_is_named_before_the_server_is_asked(tmp_path, capsys):
    (tmp_path / "a file").write_text("")
    with LoopbackServer(Script("random", keep=False)) as server:
        with pytest.raises(SystemExit) as stopped:
            evaluate(capsys, server.base_url, tmp_path / "a file" / "x.jsonl")
        assert server.requests == 0
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and f"--log {tmp_path / 'a file'}: is a file, but it must be a directory" in err
    assert "Traceback" not in err and sorted(tmp_path.iterdir()) == [tmp_path / "a file"]


def test_resume_with_another_seed_under_the_same_run_label_is_refused_before_a_byte_changes(tmp_path, capsys):
    log = tmp_path / "seeded.jsonl"
    with LoopbackServer(Script("random", keep=False)) as server:
        assert evaluate(capsys, server.base_url, log, "--boards", "3", "--run", "r", "--seed", "4")[0] == 0
        before = log.read_bytes(), manifest_path(log).read_bytes()
        requests = server.requests
        code, _, err = evaluate(capsys, server.base_url, log, "--boards", "3", "--run", "r", "--seed", "5",
                                "--resume")
        assert server.requests == requests
    stopped_with_one_line(code, err, "request seed 4", "--seed 5", "mix request seeds")
    assert (log.read_bytes(), manifest_path(log).read_bytes()) == before


class OddServer(AnsweringServer):
    """A server that answers chat completions with what is not one (``kind``): HTTP 200 without
    ``choices``, with an ``{"error": ...}`` body or an HTML page, or a body one byte per 0.5 s;
    ``models_html`` answers ``/v1/models`` with an HTML page."""

    def __init__(self, kind: str, models_html: bool = False):
        self.kind, self.models_html, self.posts = kind, models_html, 0
        super().__init__(userinfo="someone:hunter2")

    def answer_get(self, handler) -> None:
        if self.models_html:
            handler.send(b"<!DOCTYPE html><html><body>Welcome to nginx!</body></html>", "text/html")
        else:
            handler.send(json.dumps({"object": "list", "data": [{"id": MODEL, "owned_by": "odd"}]}).encode())

    def answer_post(self, handler) -> None:
        self.posts += 1
        if self.kind == "no choices":
            handler.send(json.dumps({"id": "x", "object": "chat.completion", "model": MODEL}).encode())
        elif self.kind == "error body":
            handler.send(json.dumps({"error": {"message": "the model is overloaded", "code": 503}}).encode())
        elif self.kind == "html page":
            handler.send(b"<html><head><title>Login</title></head><body>Sign in</body></html>", "text/html")
        else:  # trickle: a whole answer, one byte every 0.5 s (about 50 s)
            handler.send(json.dumps({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {
                "role": "assistant", "content": "<answer>Up</answer>"}, "finish_reason": "stop"}]}).encode(),
                trickle=True)


@pytest.mark.parametrize("kind, words", [
    ("no choices", ["without them", "not a completion"]),
    ("error body", ["an error (the model is overloaded)", "not a completion"]),
    ("html page", ["an HTML page", "not a completion"]),
])
def test_a_server_that_answers_200_without_a_completion_stops_the_run_instead_of_logging_losses(
        tmp_path, capsys, kind, words):
    log = tmp_path / "odd.jsonl"
    with OddServer(kind) as server:
        code, _, err = evaluate(capsys, server.url, log, "--boards", "2", "--concurrency", "1")
        assert server.posts == 1  # the first such answer stops the run; it is not retried
    stopped_with_one_line(code, err, *words)
    assert "hunter2" not in err and "someone" not in err
    assert not log.exists() or read_episodes(log) == []  # no board logged as lost


def test_an_html_model_list_stops_in_one_line_and_a_password_in_the_url_is_never_shown(tmp_path, capsys):
    with OddServer("no choices", models_html=True) as server:
        code, _, err = evaluate(capsys, server.url, tmp_path / "log.jsonl", "--boards", "1")
    stopped_with_one_line(code, err, "/v1/models answered an HTML page", "not a list of models")
    assert "hunter2" not in err
    code, _, err = evaluate(capsys, f"http://someone:hunter2@127.0.0.1:{free_port()}/v1", tmp_path / "log.jsonl")
    stopped_with_one_line(code, err, "cannot connect to http://127.0.0.1:")
    assert "hunter2" not in err and "someone" not in err


def test_timeout_bounds_the_whole_request_so_a_trickled_answer_cannot_hold_the_run(tmp_path, capsys):
    started = time.monotonic()
    with OddServer("trickle") as server:
        code, _, err = evaluate(capsys, server.url, tmp_path / "slow.jsonl", "--boards", "1", "--timeout", "3",
                                "--retries", "1")
    took = time.monotonic() - started
    stopped_with_one_line(code, err, "kept failing", "over --timeout 3 s", "after 1 retries")
    assert "hunter2" not in err
    assert took < 45, took  # two attempts of 3 s and a backoff (slower on a busy machine), not 50 s each
