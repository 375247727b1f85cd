"""The demo model as a user starts it: ``python -m sokoban_tools demo-model``, a real server process.

Each policy answers a real request for a validation board in the format the projection
reads (or, for ``bad-answers``, in one it cannot); the process stops cleanly on SIGTERM
and says in one line when its port is taken. ``evaluate`` against it, with no key in the
environment, is the quick start (tests/test_quickstart.py) and tests/test_evaluate.py.
"""

from __future__ import annotations

import json
import re
import os
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest

from conftest import REPO
from sokoban_tools.integrations.served.demo_model import DEMO_MODEL, POLICIES
from sokoban_tools.integrations.served.turn import user_message
from sokoban_tools.records.tasks import load_validation
from sokoban_tools.rules.board import from_lurd
from sokoban_tools.runtime.projection import project_answer


def start(*options: str) -> tuple[subprocess.Popen, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI")}
    process = subprocess.Popen([sys.executable, "-m", "sokoban_tools", "demo-model", "--port", "0", *options],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = process.stdout.readline()
    assert "serving at http://127.0.0.1:" in first, first + process.stderr.read()
    return process, first.split("serving at ")[1].split(";")[0]


def ask(base_url: str, body: dict) -> dict:
    request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


@pytest.fixture(scope="module")
def boards():
    return load_validation(REPO / "fairness" / "evaluation.jsonl")[:6]


def test_demo_model__lists_the_three_policies_the_card_promises_and_a_mixed_one():
    assert set(POLICIES) == {"random", "shortest", "bad-answers", "mixed"}


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_demo_model__answers_each_board_by_its_policy_over_http_and_stops_on_sigterm(boards, policy):
    process, base_url = start("--policy", policy)
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=60) as listing:
            assert [model["id"] for model in json.loads(listing.read())["data"]] == [DEMO_MODEL]
        for seed, row in enumerate(boards):
            body = {"model": DEMO_MODEL, "messages": [user_message(row.board)], "seed": seed, "temperature": 0.4}
            answer = ask(base_url, body)["choices"][0]["message"]["content"]
            action, valid = project_answer(answer)
            if policy == "bad-answers":
                assert not valid, answer
            elif policy == "shortest":
                assert valid and action == from_lurd(row.shortest_solution)[0], answer
            elif policy == "random":
                assert valid and action in (1, 2, 3, 4), answer
            else:
                assert isinstance(answer, str)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert f"demo model stopped after {len(boards)} requests" in out and err == ""


def test_demo_model__a_taken_port_is_named_in_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "sokoban_tools", "demo-model", "--port", str(port)], cwd=REPO,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port 0" in done.stderr


def test_evaluating_page__lists_every_policy_and_its_answer_example_is_read_as_it_says():
    page = (REPO / "docs" / "evaluating.md").read_text(encoding="utf-8")
    section = page.split("## Without a GPU: the demo model", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^\| `([a-z-]+)`", section, re.M)[1:] == list(POLICIES)  # after the header row
    answers = page.split("## The answer format", 1)[1].split("\n## ", 1)[0]
    example = re.search(r"for example `([^`]+)`", answers).group(1)
    assert project_answer(example) == (4, True)  # right, valid
    assert example.endswith("<action>right</action>")


@pytest.mark.slow
def test_evaluating_page__the_demo_route_runs_as_written_without_a_key(tmp_path):
    """The page's two blocks, the server in one process as "a second terminal", its 8000 a free port."""
    page = (REPO / "docs" / "evaluating.md").read_text(encoding="utf-8")
    section = page.split("## Without a GPU: the demo model", 1)[1].split("\n## ", 1)[0]
    serve, run = (block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI", "PYTHONPATH"))}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    server = subprocess.Popen(["bash", "-c", serve.replace("8000", port)], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "serving at" in server.stdout.readline()
        done = subprocess.run(["bash", "-c", "set -e\n" + run.replace("8000", port)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900)
    finally:
        server.terminate()
        server.communicate(timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    # score's row: the shortest policy solves every board
    assert re.search(r"^sokoban-demo +seed0 +0 +256/256 100\.0%", done.stdout, re.M), done.stdout
