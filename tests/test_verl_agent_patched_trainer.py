"""verl-agent as its users run it, patched by sokoban_tools/integrations/verl_agent/ (the real client).

A copy of ../shared/verl-agent/ is patched with ``git apply``; ``verl_agent_run.py``
composes its ``ppo_trainer.yaml`` with ``run_sokoban.sh``'s overrides plus
``env.fairness=true``, calls its real ``make_envs`` and plays validation the way the
patched ``_validate`` does and a training step the way ``fit`` does, with a scripted
model. Here: from the clone (boards beside it), and from the wheel installed outside
the clone with the boards from the loopback Hub at a pinned revision and at the
release tag; ``env.fairness=false`` calls verl-agent's own builder; importing what a
fair ``make_envs`` imports loads no gym.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

from conftest import REPO
from hub_mirror import hub_env, serve_dataset_repo
from sokoban_tools.records.manifest import manifest_path, read_manifest
from sokoban_tools.records.boards import RELEASE_REVISION
from sokoban_tools.evaluation.replay import verify_log
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.tasks import load_training, load_validation
from unavailable import unavailable
from venvs import OLAH, Venv, require_venv, run_client, source_copy

pytestmark = pytest.mark.slow

UPSTREAM = REPO.parent / "shared" / "verl-agent"
PATCH = REPO / "sokoban_tools" / "integrations" / "verl_agent" / "sokoban-fairness.patch"
RUNNER = Path(__file__).resolve().parent / "verl_agent_run.py"
EVALUATION = [row.task_id for row in load_validation(REPO / "fairness" / "evaluation.jsonl")]
TRAINING = {row.task_id for row in load_training(REPO / "fairness" / "train.jsonl")}
DEPENDENCIES = tuple(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"])
CLIENT_REQUIREMENTS = ("torch==2.13.0", "hydra-core>=1.3", "omegaconf>=2.3")
VERL_WHEEL_VENV = Venv(
    str(Path(tempfile.gettempdir()) / f"sokoban-fairness-verl-wheel-{hashlib.sha256(bytes(REPO)).hexdigest()[:12]}"),
    DEPENDENCIES + CLIENT_REQUIREMENTS,
    "import torch, hydra, omegaconf, numpy, huggingface_hub, pyarrow\n"
    "assert torch.__version__.startswith('2.13.0'), torch.__version__",
)


def require_upstream() -> None:
    """verl-agent's own files beside the clone, or the test is unavailable."""
    if not (UPSTREAM / "UPSTREAM_COMMIT").is_file():
        unavailable(f"verl-agent's files are missing at {UPSTREAM} (../shared/verl-agent)")


def patched_copy(directory: Path) -> Path:
    """``directory``: a copy of verl-agent's files with the project's patch applied by ``git apply``."""
    require_upstream()
    shutil.copytree(UPSTREAM, directory)
    for path in directory.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    done = subprocess.run(["git", "apply", str(PATCH)], cwd=directory, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return directory


def run(python, tree: Path, work: Path, env: dict | None = None, **args) -> dict:
    """``verl_agent_run.py`` with ``python`` from ``work``; its report."""
    work.mkdir(exist_ok=True)
    done = subprocess.run([str(python), str(RUNNER), json.dumps({"tree": str(tree), "work": str(work), **args})],
                          cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT "):])


def check_passes(report: dict, sizes: dict, scorer: list[str], env: dict | None = None,
                 training_groups: tuple[int, int] = (32, 8)) -> None:
    """Each validation call played the 256 boards once in stored order, every board's record
    is in the log with the trainer's step as its update, the log scores, and the training
    step drew ``training_groups`` (boards, copies: run_sokoban.sh's 32 x 8)."""
    assert sorted(report["validation"]) == sorted(map(str, sizes))
    for size, rows in sizes.items():
        entry = report["validation"][str(size)]
        log = read_episodes(entry["log"])
        for played in entry["passes"]:
            assert played["batch_rows"] == rows  # one batch per chunk, a row per environment
            assert played["task_ids"] == EVALUATION  # every board once, in stored order
            records = {r.task_id: r for r in log if r.phase == "validation" and r.update == played["update"]}
            assert sorted(records) == sorted(EVALUATION)
            assert [records[t].won for t in EVALUATION] == played["won"]
            assert [round(records[t].episode_return, 4) for t in EVALUATION] == [round(x, 4) for x in played["returns"]]
            assert {(r.method, r.run) for r in records.values()} == {(entry["method"], entry["run"])}
        assert len([r for r in log if r.phase == "validation"]) == len(entry["passes"]) * 256
        assert verify_log(entry["log"]).verified == len(log)  # every record's moves replay to what it says
        scored = subprocess.run([*scorer, entry["log"], "--json"], capture_output=True, text=True, env=env,
                                cwd=Path(entry["log"]).parent, timeout=300)
        assert scored.returncode == 0, scored.stderr
        groups = json.loads(scored.stdout)["groups"]
        assert [(g["update"], g["boards"], g["wins"]) for g in groups] == [
            (p["update"], 256, sum(p["won"])) for p in entry["passes"]]
    first = report["validation"][str(next(iter(sizes)))]
    training = [r for r in read_episodes(first["log"]) if r.phase == "training"]
    boards, copies = training_groups
    assert len(training) == boards * copies and {r.update for r in training} == {7}  # the trainer's global_steps
    drawn = report["training"]["task_ids"]
    assert set(drawn) <= TRAINING and len(set(drawn)) == boards
    assert all(len(set(drawn[i:i + copies])) == 1 for i in range(0, boards * copies, copies))  # adjacent copies
    assert sorted(r.won for r in training) == sorted(report["training"]["won"])
    # the run manifest beside the log: the composed config's settings, the step's costs
    manifest = read_manifest(manifest_path(first["log"]))
    assert manifest["method"] == first["method"] and manifest["settings"]["action_horizon"] == 15
    assert manifest["settings"]["rollout.group_size"] == copies
    # verl's whole step (3.5 s on 2 GPUs) holds gen (2 s): kept as the rest, so the entries add up
    assert manifest["costs"] == {"step_other": {"unit": "GPU-seconds", "value": 3.0},
                                 "gen": {"unit": "GPU-seconds", "value": 4.0},
                                 "tokens": {"unit": "tokens", "value": 4096.0}}


def require(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        unavailable(f"{', '.join(missing)} not installed; pip install -e '.[test]'")


# --- The patch itself ---------------------------------------------------------------------

def test_the_patch_applies_to_the_pinned_commit_and_wires_one_function_per_changed_function(tmp_path):
    tree = patched_copy(tmp_path / "verl-agent")
    text = PATCH.read_text(encoding="utf-8")
    files = sorted(line.split(" b/")[1] for line in text.splitlines() if line.startswith("diff --git"))
    assert files == ["agent_system/environments/env_manager.py", "verl/trainer/config/ppo_trainer.yaml",
                     "verl/trainer/ppo/ray_trainer.py"]
    calls = [line for line in text.splitlines() if "from sokoban_tools" in line]
    assert [c.split("import ")[1] for c in calls] == ["make_fair_envs", "validation_batches", "save_checkpoint_state",
                                                      "restore_checkpoint_state", "begin_run", "label_training_update",
                                                      "record_costs", "end_run"]
    assert "fairness: false" in (tree / "verl" / "trainer" / "config" / "ppo_trainer.yaml").read_text()
    readme = (REPO / "sokoban_tools" / "integrations" / "verl_agent" / "README.md").read_text(encoding="utf-8")
    assert (UPSTREAM / "UPSTREAM_COMMIT").read_text().strip() in readme


def test_with_fairness_false_make_envs_calls_verl_agents_own_builder(tmp_path):
    require("torch", "omegaconf", "hydra")
    tree = patched_copy(tmp_path / "verl-agent")
    result = run_client(sys.executable, '''
    import types
    from pathlib import Path
    sys.path.insert(0, ARGS["tree"])
    sys.path.insert(0, ARGS["tests"])
    from hydra import compose, initialize_config_dir
    import sokoban_tools.integrations.verl_agent.hooks as integration
    from agent_system.environments import make_envs
    from verl_agent_run import launcher_overrides

    # verl-agent's original Sokoban package, spied on: make_envs imports its builder and
    # projection from it (the real one needs gym, gym_sokoban and matplotlib)
    calls = []
    class Envs:
        mode = "rgb_array"
    def build_sokoban_envs(*args, **kwargs):
        kwargs["env_kwargs"] = {k: (list(v) if k == "dim_room" else v) for k, v in kwargs["env_kwargs"].items()}
        calls.append([list(args), kwargs])
        return Envs()
    def sokoban_projection(texts):
        pass
    original = types.ModuleType("agent_system.environments.env_package.sokoban")
    original.build_sokoban_envs, original.sokoban_projection = build_sokoban_envs, sokoban_projection
    sys.modules[original.__name__] = original
    integration.make_fair_envs = lambda *args: calls.append("fair")
    with initialize_config_dir(config_dir=ARGS["tree"] + "/verl/trainer/config", version_base=None):
        config = compose("ppo_trainer", overrides=launcher_overrides(Path(ARGS["tree"])))
    envs, val_envs = make_envs(config)
    report({"fairness": config.env.fairness, "calls": calls,
            "projection": envs.projection_f.func is sokoban_projection and val_envs.envs is not envs.envs})
    ''', {"tree": str(tree), "tests": str(Path(__file__).parent)})
    assert result["fairness"] is False and result["projection"] is True
    common = {"mode": "rgb_array", "env_kwargs": {"dim_room": [6, 6], "num_boxes": 1, "max_steps": 15, "search_depth": 30},
              "resources_per_worker": {"num_cpus": 0.1, "num_gpus": 0}}
    assert result["calls"] == [[[0, 32, 8], {"is_train": True, **common}], [[1000, 128, 1], {"is_train": False, **common}]]


def test_importing_what_a_fair_make_envs_imports_loads_no_gym_gym_sokoban_or_datasets(tmp_path):
    require("torch", "omegaconf")
    assert loaded_by_a_fair_make_envs(tmp_path) == set()


def loaded_by_a_fair_make_envs(tmp_path) -> set[str]:
    tree = patched_copy(tmp_path / "verl-agent")
    code = ("import sys\nsys.path.insert(0, sys.argv[1])\n"
            "from agent_system.environments import make_envs\n"
            "from sokoban_tools.integrations.verl_agent.hooks import make_fair_envs\n"
            "print(sorted(m for m in ('gym', 'gym_sokoban', 'datasets') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, str(tree)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.replace("'", '"')))


# --- From the clone -------------------------------------------------------------------------

def test_clone__validation_plays_every_board_once_in_stored_order_and_the_log_scores(tmp_path):
    require("torch", "omegaconf", "hydra", "pyarrow")
    tree = patched_copy(tmp_path / "verl-agent")
    report = run(sys.executable, tree, tmp_path / "work", val_batch_sizes=[64, 100, 128], backend="local")
    assert "env.sokoban.mode=rgb_array" in report["overrides"] and "data.val_batch_size=128" in report["overrides"]
    assert Path(report["package"]).is_relative_to(REPO)
    # val_batch_size 100 does not divide the 256 boards: 64 environments, so every chunk is full
    check_passes(report, {64: [64] * 4, 100: [64] * 4, 128: [128] * 2}, [sys.executable, "-m", "sokoban_tools", "score"])
    entry = report["validation"]["128"]
    assert (entry["method"], entry["run"]) == ("grpo", "grpo_qwen2.5_vl_3b")  # algorithm and experiment names
    assert 0 < sum(entry["passes"][0]["won"]) < 256  # the malformed answers lose some boards


def test_clone__text_mode_trains_and_validates_through_the_patch_as_the_visual_mode_does(tmp_path):
    # verl-agent's own default mode: the manager shows the text grid, SimpleMemory's history after turn 1
    require("torch", "omegaconf", "hydra", "pyarrow")
    tree = patched_copy(tmp_path / "verl-agent")
    report = run(sys.executable, tree, tmp_path / "work", val_batch_sizes=[128], backend="local",
                 mode="tiny_rgb_array", updates=[0])
    assert "env.sokoban.mode=tiny_rgb_array" in report["overrides"]
    assert "env.sokoban.mode=rgb_array" not in report["overrides"]
    check_passes(report, {128: [128] * 2}, [sys.executable, "-m", "sokoban_tools", "score"])
    settings = read_manifest(manifest_path(report["validation"]["128"]["log"]))["settings"]
    assert settings["image_processing.observation"] == "tiny_rgb_array"
    assert settings["image_processing.history_length"] == 2


# --- From the wheel, outside the clone, boards from the loopback Hub ------------------------

def git(directory: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(directory), "-c", "user.name=hub test", "-c",
                           "user.email=hub-test@localhost", "-c", "commit.gpgsign=false", *args],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def card_runtime_commands() -> tuple[list[str], list[str], list[str]]:
    """The card's runtime commands: (shell lines before training, lines added to the launcher,
    shell lines after training), from the card or the docs page that holds them."""
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        blocks = [body for _, body in re.findall(r"```(\w*)\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]
        found = [i for i, body in enumerate(blocks) if "sokoban-fairness.patch" in body]
        if found:
            setup, overrides, after = blocks[found[0]:found[0] + 3]
            return setup.splitlines(), overrides.splitlines(), after.splitlines()
    raise AssertionError("no page of the card shows the runtime commands (git apply of the patch)")


def shell(line: str, cwd: Path, env: dict) -> str:
    done = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def test_wheel__the_cards_commands_from_an_installed_package_with_boards_from_the_hub(tmp_path):
    require_upstream()
    python = require_venv(VERL_WHEEL_VENV)
    olah = require_venv(OLAH)
    setup, launcher_lines, after = card_runtime_commands()
    source_copy(tmp_path / "sokoban-fairness")  # this repository, as downloaded
    shutil.copytree(UPSTREAM, tmp_path / "verl-agent")  # the trainer's verl-agent
    for path in (tmp_path / "verl-agent").rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    dataset = tmp_path / "dataset"  # the published data files, one commit, tagged as the release
    for name in ("fairness/train.jsonl", "fairness/evaluation.jsonl"):
        (dataset / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, dataset / name)
    git(tmp_path, "init", "--quiet", "--initial-branch=main", str(dataset))
    git(dataset, "add", "fairness")
    git(dataset, "commit", "--quiet", "-m", "the published boards")
    commit = git(dataset, "rev-parse", "HEAD")
    subprocess.run([str(python), "-m", "pip", "uninstall", "--quiet", "--yes", "sokoban-fairness"], capture_output=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OLAH_PYTHON", str(olah))
        with serve_dataset_repo(dataset, tags=(RELEASE_REVISION,)) as endpoint:
            env = hub_env(endpoint, tmp_path / "hf-home")
            env.pop("PYTHONPATH", None)
            env["PATH"] = f"{python.parent}:{env['PATH']}"  # the trainer's environment
            for line in setup:  # install, git apply
                shell(line, tmp_path, env)
            launcher = tmp_path / "verl-agent" / "examples" / "grpo_trainer" / "run_sokoban.sh"
            text = launcher.read_text(encoding="utf-8")
            at = text.index("    trainer.val_before_train=True")
            launcher.write_text(text[:at] + "".join(line + "\n" for line in launcher_lines) + text[at:])
            work = tmp_path / "run"
            report = run(python, tmp_path / "verl-agent", work, env=env, val_batch_sizes=[128], backend="local",
                         log_per_size=False)
            assert Path(report["package"]).parents[3].name == "site-packages"  # sokoban_tools/integrations/verl_agent/hooks.py, installed
            assert "env.fairness=true" in report["overrides"]
            check_passes(report, {128: [128] * 2}, [str(python), "-m", "sokoban_tools", "score"], env)
            for line in after:  # score, without --evaluation: the boards of the pinned release
                shown = shell(line, work, env)
                assert shown.startswith("2 validation passes (512 rows) of evaluation.jsonl"), shown
            # a pinned commit instead, given as env.fairness_revision
            pinned = run(python, tmp_path / "verl-agent", tmp_path / "pinned", env=env, val_batch_sizes=[64],
                         backend="local", hub_revision=commit, extra_overrides=[f"env.fairness_revision={commit}"],
                         updates=[3])
            check_passes(pinned, {64: [64] * 4}, [str(python), "-m", "sokoban_tools", "score"], env)
    snapshots = {p.parent.parent.name for p in (tmp_path / "hf-home").rglob("snapshots/*/fairness/evaluation.jsonl")}
    assert snapshots == {commit}  # the release tag resolved to the release's commit
