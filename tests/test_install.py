"""Installed as a trainer installs it: the wheel, in a venv outside the clone.

The product (task loading, the environment, the sampler, scoring) must work
from site-packages with the data passed by path; the wheel ships no pipeline,
and every pipeline command says in one line that it runs from a clone.

The wheel's venv lives in the temporary folder, outside the clone, and holds
the wheel's dependencies from pyproject.toml; it is built once (about a minute
from the pip cache) and reused, and each run reinstalls the freshly built wheel
into it and lets ``pip check`` confirm the dependencies still fit.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from conftest import REPO
from sokoban_tools.__main__ import USER_COMMANDS
from sokoban_tools.runtime.sampler import TrainingSampler
from sokoban_tools.layout import TRAIN_DATA as TRAIN_FILE, VALIDATION_DATA as EVALUATION_FILE
from sokoban_tools.records.tasks import load_training
from unavailable import unavailable
from venvs import Venv, VenvUnavailable, build_wheel, require_venv, run_client

pytestmark = pytest.mark.slow

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
DEPENDENCIES = tuple(PYPROJECT["project"]["dependencies"])
WHEEL_VENV = Venv(
    str(Path(tempfile.gettempdir()) / f"sokoban-fairness-wheel-{hashlib.sha256(bytes(REPO)).hexdigest()[:12]}"),
    DEPENDENCIES,
    "from importlib.metadata import version\n"
    + "".join(f"version({Requirement(r).name!r})\n" for r in DEPENDENCIES),
)
# Each pipeline command, as a user of the wheel would start it.
COMMANDS = {
    "reproduce": ["-m", "sokoban_tools", "reproduce"],
    "pools": ["-m", "sokoban_tools", "pools"],
    "selection": ["-m", "sokoban_tools", "selection"],
    "summary": ["-m", "sokoban_tools", "summary"],
    "verify": ["-m", "sokoban_tools", "verify", "--check"],
    "card": ["-m", "sokoban_tools", "card"],
    "benchmark": ["-m", "sokoban_tools", "benchmark"],
}
SAMPLER = {"batch_size": 4, "rollout_n": 2, "seed": 11}


# --- The wheel -----------------------------------------------------------------------

def _run(step: list[str], what: str, cwd: Path | None = None) -> None:
    done = subprocess.run(step, capture_output=True, text=True, cwd=cwd, timeout=600)
    if done.returncode:
        unavailable(f"{what} failed, so the installed package is untested: `{' '.join(step)}`\n"
                    f"{(done.stdout + done.stderr)[-3000:]}")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The interpreter of the wheel's venv, with the wheel of the working tree installed."""
    python = require_venv(WHEEL_VENV)
    try:
        wheel = str(build_wheel(tmp_path_factory.mktemp("wheel-source"), tmp_path_factory.mktemp("dist")))
    except VenvUnavailable as err:
        unavailable(f"building the wheel failed, so the installed package is untested: {err}")
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", wheel],
         "installing the wheel")
    _run([str(python), "-m", "pip", "check"], "pip check of the wheel's dependencies")
    return python


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    """A working folder outside the clone."""
    folder = tmp_path / "trainer"
    folder.mkdir()
    return folder


def test_the_runtime_works_from_the_wheel_with_data_given_by_path(installed, elsewhere):
    data = elsewhere / "data"
    for name in (EVALUATION_FILE, TRAIN_FILE):
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, data / name)
    result = run_client(installed, '''
    import os
    os.chdir(ARGS["cwd"])  # a trainer's folder: no clone on the path
    import sokoban_tools
    from sokoban_tools.rules.board import from_lurd
    from sokoban_tools.runtime.env import FairSokobanEnv
    from sokoban_tools.runtime.sampler import TrainingSampler, validation_chunks
    from sokoban_tools.evaluation.score import score
    from sokoban_tools.records.tasks import load_validation, load_training
    from sokoban_tools.integrations.verl_agent.envs import build_sokoban_envs

    boards = load_validation(ARGS["evaluation"])
    row = boards[0]
    env = FairSokobanEnv()
    observation, info = env.reset(row)
    for action in from_lurd(row.shortest_solution):
        observation, reward, done, info = env.step(action)
    # One validation pass through the verl-agent drop-in, each board played by its stored
    # solution, logged and scored: runtime, episode log and scoring from the wheel.
    envs = build_sokoban_envs(0, 128, 1, is_train=False, backend="local", dataset_dir=ARGS["data"],
                              method="oracle", run="r0", episode_log="episodes.jsonl")
    solutions = {r.task_id: from_lurd(r.shortest_solution) for r in boards}
    envs.begin_pass(update=0)
    for _ in range(envs.num_chunks):
        envs.reset()
        plans = [solutions[task] for task in envs.task_ids]
        for turn in range(max(map(len, plans))):
            envs.step([plan[turn] if turn < len(plan) else 0 for plan in plans])
    envs.end_pass()
    scored = score(["episodes.jsonl"], ARGS["evaluation"])
    training = [r.task_id for r in load_training(ARGS["train"])]
    batch = TrainingSampler(training, **ARGS["sampler"]).next_batch()
    report({
        "package": os.path.dirname(sokoban_tools.__file__),
        "rows": len(boards),
        "won": info["won"], "done": done, "image": list(observation.shape),
        "scored": scored,
        "batch": list(batch.task_ids),
        "chunks": [len(chunk.task_ids) for chunk in validation_chunks([r.task_id for r in boards], 128)],
        "beside": sorted(name for name in os.listdir(os.path.dirname(os.path.dirname(sokoban_tools.__file__)))
                         if name.startswith(("sokoban_", "select_")) and name.endswith(".py")),
        "pipeline": os.path.exists(os.path.join(os.path.dirname(sokoban_tools.__file__), "pipeline")),
    })
    ''', {"cwd": elsewhere, "data": data, "evaluation": data / EVALUATION_FILE, "train": data / TRAIN_FILE,
        "sampler": SAMPLER})
    assert Path(result["package"]).parent.name == "site-packages"
    assert not Path(result["package"]).is_relative_to(REPO)
    assert result["rows"] == 256 and result["won"] and result["done"] and result["image"] == [96, 96, 3]
    expected = TrainingSampler([r.task_id for r in load_training(REPO / TRAIN_FILE)], **SAMPLER).next_batch()
    assert result["batch"] == list(expected.task_ids)  # the same draws as in the clone
    assert result["chunks"] == [128, 128]
    groups = result["scored"]["groups"]
    assert [(g["method"], g["boards"], g["wins"]) for g in groups] == [("oracle", 256, 256)]
    # the product alone: the loading script and its modules, no pipeline, no selector
    assert result["beside"] == ["sokoban_fairness.py", "sokoban_pins.py", "sokoban_published.py", "sokoban_render.py"]
    assert result["pipeline"] is False


@pytest.mark.parametrize("command", COMMANDS)
def test_each_pipeline_command_says_in_one_line_that_it_runs_from_a_clone(installed, elsewhere, command):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([str(installed), *COMMANDS[command]], cwd=elsewhere, capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "runs from a clone of sokoban-fairness" in done.stderr and "pip install -e ." in done.stderr
    assert not list(elsewhere.iterdir())  # wrote nothing


@pytest.mark.parametrize("command", [c.name for c in USER_COMMANDS if not c.clone_only])
def test_each_user_command_runs_from_the_wheel(installed, elsewhere, command):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([str(installed), "-m", "sokoban_tools", command, "--help"], cwd=elsewhere,
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith(f"usage: python -m sokoban_tools {command} ")


def test_every_commands_help_works_in_a_clone_with_only_the_base_install():
    """``pip install -e .`` without extras: each command's ``--help`` (``card``'s reads the training
    report, which once imported gymnasium through the budget) prints its usage. The base venv of
    the wheel tests, run from the clone so that its code, not the wheel's, is what is imported."""
    from sokoban_tools.__main__ import COMMANDS as ALL_COMMANDS

    python = require_venv(WHEEL_VENV)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    probe = ("import importlib.util; print([n for n in ('gymnasium', 'torch', 'stable_baselines3', 'inspect_ai') "
             "if importlib.util.find_spec(n)])")
    present = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, env=env, timeout=300)
    assert present.stdout.strip() == "[]", present.stdout  # the base install only
    for command in ALL_COMMANDS:
        done = subprocess.run([str(python), "-m", "sokoban_tools", command.name, "--help"], cwd=REPO,
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (command.name, done.stderr[-2000:])
        assert done.stdout.startswith(f"usage: python -m sokoban_tools {command.name}"), (command.name, done.stdout)
