"""VAGEN on the stored boards: its real evaluator plays all 256 once, its env is the same in every process.

VAGEN's own files come from ../shared/vagen (copied to a temporary folder, so no
bytecode lands in shared/); they are never part of the project. The evaluator runs as a
user runs it, ``python -m sokoban_tools vagen evaluate`` in a subprocess, with VAGEN's
OpenAI backend pointed at a loopback server whose scripted player reads the board from
the PNG it is sent (tests/pixel_player.py) and answers in VAGEN's ``wm`` reply format.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO
from pixel_player import board_from_image, plan
from unavailable import unavailable

from sokoban_tools.evaluation.replay import verify_log
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import ManifestError, manifest_from_verl_config, manifest_path, read_manifest
from sokoban_tools.records.tasks import load_training, load_validation
from sokoban_tools.runtime.env import render

pytestmark = pytest.mark.slow
SHARED_VAGEN = REPO.parent / "shared" / "vagen"
WORDS = {1: "Up", 2: "Down", 3: "Left", 4: "Right"}
TURNS, PER_TURN = 5, 3  # VAGEN's Sokoban example: 5 turns of up to 3 actions


@pytest.fixture(scope="module")
def vagen(tmp_path_factory) -> Path:
    """A private copy of VAGEN's files, importable here and in subprocesses."""
    if not (SHARED_VAGEN / "vagen" / "envs" / "sokoban" / "sokoban_env.py").exists():
        unavailable(f"VAGEN's files are missing ({SHARED_VAGEN})")
    for module, package in (("gym_sokoban", "gym-sokoban"), ("openai", "openai"), ("omegaconf", "omegaconf")):
        try:
            __import__(module)
        except ImportError:
            unavailable(f"{package} is not installed (pip install -e '.[test]')")
    folder = tmp_path_factory.mktemp("vagen") / "vagen-subset"
    shutil.copytree(SHARED_VAGEN, folder, ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))


def subprocess_env(vagen: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(PYTHONPATH=os.pathsep.join([str(vagen), str(REPO)]), PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


class ScriptedPlayer(BaseHTTPRequestHandler):
    """OpenAI's chat.completions on loopback: the board from the last image, the next moves."""

    seen: list = []  # (turn, board) of every request
    lock = threading.Lock()

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        users = [m for m in request["messages"] if m["role"] == "user"]
        urls = [part["image_url"]["url"] for part in users[-1]["content"] if part["type"] == "image_url"]
        png = base64.b64decode(urls[-1].split(",", 1)[1])
        from PIL import Image

        image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        with self.lock:
            self.seen.append((len(users), board_from_image(image)))
        moves = ",".join(WORDS[a] for a in plan(image)[:PER_TURN])
        text = (f"<observation>read from the image</observation><think>shortest path</think>"
                f"<answer>{moves}</answer><prediction>closer</prediction>")
        body = json.dumps({"id": "scripted", "object": "chat.completion", "created": 0, "model": request["model"],
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": text}}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_vagens_evaluator_plays_every_board_once_the_shortest_path_player_wins_all_and_the_log_scores(
        vagen, tmp_path):
    from sokoban_tools.evaluation.compare import compare
    from sokoban_tools.evaluation.score import score
    from sokoban_tools.rules.solver import shortest_solution
    from test_manifest import composed

    ScriptedPlayer.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedPlayer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log = tmp_path / "vagen.jsonl"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "sokoban_tools", "vagen", "evaluate", "--episode-log", str(log),
             "--method", "shortest-path", "--run", "1",
             f"backends.openai.base_url=http://127.0.0.1:{server.server_address[1]}/v1",
             "backends.openai.api_key=loopback", "backends.openai.model=scripted",
             f"experiment.dump_dir={tmp_path / 'rollouts'}", "run.resume=off", "run.live_summary=false",
             "run.max_concurrent_jobs=32", "backends.openai.max_concurrency=32"],
            cwd=tmp_path, env=subprocess_env(vagen), capture_output=True, text=True, timeout=240)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr[-3000:]
    rows = load_validation()
    # the player saw, in its first turn of each episode, every validation board exactly once
    first_seen = sorted(board.xsb() for turn, board in ScriptedPlayer.seen if turn == 1)
    assert first_seen == sorted(row.board.xsb() for row in rows)
    records = read_episodes(log)
    assert [r.task_id for r in records] == [row.task_id for row in rows]
    assert all(r.won and r.phase == "validation" and (r.method, r.run, r.update) == ("shortest-path", "1", 0)
               for r in records)
    for record, row in zip(records, rows):  # VAGEN's limits hold every shortest solution
        length = len(shortest_solution(row.board))
        assert length <= TURNS * PER_TURN and record.actions == length
        assert record.episode_return == pytest.approx(0.1 * math.ceil(length / PER_TURN) + 1.0)
    replayed = verify_log(log)  # outcome and actions; VAGEN's rewards are not the runtime's, so no return
    assert (replayed.verified, replayed.returns_unchecked) == (256, (str(log),))
    report = score([log])
    (group,) = report["groups"]
    assert (group["wins"], group["boards"], group["success"]) == (256, 256, 1.0)
    assert f"score them with: python -m sokoban_tools score {log}" in done.stdout

    manifest = read_manifest(manifest_path(log))
    settings = manifest["settings"]
    assert (settings["initial_weights.model"], settings["action_horizon"], settings["reward.solved"],
            settings["decoding.validation.temperature"]) == ("scripted", 15, 1.0, 0.0)
    assert manifest["notes"]["vagen"]["turn_limit"] == 5 and manifest["notes"]["vagen"]["reply_format"] == "wm"
    assert manifest["data_sha256"]["fairness/train.jsonl"] is None

    # compare against a verl-agent run names the settings that differ
    verl = tmp_path / "verl.jsonl"
    shutil.copy(log, verl)
    manifest_path(verl).write_text(json.dumps(manifest_from_verl_config(composed(), method="grpo")))
    with pytest.raises(ManifestError) as refused:
        compare([log], [verl])
    for key in ("reward.step", "reward.solved", "reward.box_on_target", "initial_weights.model"):
        assert f"controlled setting {key} differs" in str(refused.value)
    assert "controlled setting action_horizon differs" not in str(refused.value)  # 5 x 3 = 15 both

    # a second pass into the same log under the same names is refused before VAGEN runs
    again = subprocess.run([sys.executable, "-m", "sokoban_tools", "vagen", "log", "--episode-log", str(log),
                            "--method", "shortest-path", "--run", "1", "backends.openai.model=scripted",
                            f"experiment.dump_dir={tmp_path / 'rollouts'}"],
                           cwd=tmp_path, env=subprocess_env(vagen), capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "already holds a validation pass" in again.stderr
    assert len(read_episodes(log)) == 256

    # another model's episodes are never logged from this model's dump, and a relative dump folder,
    # which VAGEN would resolve inside the installed package, is refused
    for overrides, refusal in ((["backends.openai.model=another", f"experiment.dump_dir={tmp_path / 'rollouts'}"],
                                "holds the rollouts of"),
                               (["backends.openai.model=scripted", "experiment.dump_dir=runs/rollouts"],
                                "inside the installed package")):
        other = tmp_path / "other.jsonl"
        refused = subprocess.run([sys.executable, "-m", "sokoban_tools", "vagen", "log", "--episode-log", str(other),
                                  "--run", "2", *overrides], cwd=tmp_path, env=subprocess_env(vagen),
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode == 1 and refusal in refused.stderr and "Traceback" not in refused.stderr
        assert not other.exists() and not manifest_path(other).exists()

    # a dump holding a board twice, or an episode that ended in a model error, is refused by path
    from sokoban_tools.integrations.vagen.rollouts import records_from_dump
    from sokoban_tools.records.rows import DataError

    tag = tmp_path / "rollouts" / "tag_sokoban_fairness_validation"
    folders = sorted(path for path in tag.iterdir() if path.is_dir())
    assert len(folders) == 256 and len(records_from_dump(tag, "m", "r")) == 256
    shutil.copytree(folders[0], tag / "zz-copy")
    with pytest.raises(DataError, match="was played already"):
        records_from_dump(tag, "m", "r")
    shutil.rmtree(tag / "zz-copy")
    metrics = json.loads((folders[5] / "metrics.json").read_text())
    (folders[5] / "metrics.json").write_text(json.dumps({**metrics, "finish_reason": "model_error"}))
    with pytest.raises(DataError, match=r"metrics.json: the episode ended with 'model_error'.*run.resume=skip_completed"):
        records_from_dump(tag, "m", "r")
    for damaged in ({key: value for key, value in metrics.items() if key != "cumulative_reward"}, [metrics]):
        (folders[5] / "metrics.json").write_text(json.dumps(damaged))
        with pytest.raises(DataError, match=r"metrics.json: not the metrics VAGEN writes for an episode"):
            records_from_dump(tag, "m", "r")

    # fields VAGEN never writes are refused naming the rollout, before a row is written
    rows, seed = load_validation(), metrics["seed"]
    start = metrics["infos"][0]
    other = rows[(seed + 1) % len(rows)]
    for damaged, refusal in (
            ({**metrics, "success": "false"}, "success is 'false', not true or false"),
            ({**metrics, "infos": [{**start, "task_id": other.task_id}, *metrics["infos"][1:]]},
             f"seed {seed} plays board {rows[seed].task_id}"),
            ({**metrics, "infos": [{**start, "file_sha256": "0" * 64}, *metrics["infos"][1:]]},
             "played an evaluation.jsonl of SHA-256 000000000000"),
            ({**metrics, "infos": [start, {**metrics["infos"][1], "actions_taken": -3}, *metrics["infos"][2:]]},
             "not counts")):
        (folders[5] / "metrics.json").write_text(json.dumps(damaged))
        with pytest.raises(DataError, match=re.escape(f"{folders[5] / 'metrics.json'}: ") + ".*" + re.escape(refusal)):
            records_from_dump(tag, "m", "r")
        refused = subprocess.run([sys.executable, "-m", "sokoban_tools", "vagen", "log", "--episode-log",
                                  str(tmp_path / "edited.jsonl"), "backends.openai.model=scripted",
                                  f"experiment.dump_dir={tmp_path / 'rollouts'}"],
                                 cwd=tmp_path, env=subprocess_env(vagen), capture_output=True, text=True, timeout=60)
        assert refused.returncode == 1 and refusal in refused.stderr and "Traceback" not in refused.stderr
        assert not (tmp_path / "edited.jsonl").exists() and not manifest_path(tmp_path / "edited.jsonl").exists()

    # a metrics.json cut short is refused with advice that repairs it: following it, VAGEN plays that
    # board again (the same model on another port is the same owner) and the log takes all 256
    (folders[5] / "metrics.json").write_text(json.dumps(metrics)[:100])
    with pytest.raises(DataError, match=re.escape(f"remove the folder {folders[5]} and run VAGEN again")):
        records_from_dump(tag, "m", "r")
    shutil.rmtree(folders[5])
    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedPlayer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ScriptedPlayer.seen = []
    try:
        again = subprocess.run(
            [sys.executable, "-m", "sokoban_tools", "vagen", "evaluate", "--episode-log", str(tmp_path / "again.jsonl"),
             "--method", "shortest-path", "--run", "1",
             f"backends.openai.base_url=http://127.0.0.1:{server.server_address[1]}/v1",
             "backends.openai.api_key=loopback", "backends.openai.model=scripted",
             f"experiment.dump_dir={tmp_path / 'rollouts'}", "run.resume=skip_completed", "run.live_summary=false"],
            cwd=tmp_path, env=subprocess_env(vagen), capture_output=True, text=True, timeout=240)
    finally:
        server.shutdown()
        server.server_close()
    assert again.returncode == 0, again.stderr[-3000:]
    assert [board.xsb() for turn, board in ScriptedPlayer.seen if turn == 1] == [rows[seed].board.xsb()]
    assert read_episodes(tmp_path / "again.jsonl") == read_episodes(log)


PROBE = r"""
import asyncio, hashlib, json, sys
import numpy as np
from sokoban_tools.integrations.vagen.env import FairSokoban

async def main(split, seeds):
    digest = hashlib.sha256()
    env = FairSokoban({"render_mode": "vision", "fairness_split": split, "prompt_format": "wm"})
    digest.update((await env.system_prompt())["obs_str"].encode())
    for seed in seeds:
        obs, info = await env.reset(seed)
        digest.update(json.dumps(info, sort_keys=True).encode() + obs["obs_str"].encode())
        digest.update(np.asarray(obs["multi_modal_input"]["<image>"][0]).tobytes())
        for reply in ("<observation>o</observation><think>t</think><answer>Up,Left</answer><prediction>p</prediction>",
                      "no tags at all"):
            obs, reward, done, info = await env.step(reply)
            digest.update(repr((obs["obs_str"], reward, done, info["actions_taken"], info["success"])).encode())
            digest.update(np.asarray(obs["multi_modal_input"]["<image>"][0]).tobytes())
    return digest.hexdigest()

print(json.dumps({"validation": asyncio.run(main("validation", range(0, 256, 5))),
                  "train": asyncio.run(main("train", [0, 4999, 5000, 123456789]))}))
"""


def test_the_environment_through_vagens_interface_is_identical_across_processes_with_other_hash_seeds(vagen):
    digests = [json.loads(subprocess.run([sys.executable, "-W", "ignore", "-c", PROBE], capture_output=True,
                                         text=True, check=True, timeout=120,
                                         env=subprocess_env(vagen, PYTHONHASHSEED=salt)).stdout.splitlines()[-1])
               for salt in ("1", "2")]
    assert digests[0] == digests[1]


def test_reset_installs_the_stored_board_and_vagens_rules_play_it(vagen):
    from sokoban_tools.integrations.vagen.env import FairSokoban

    rows, train = load_validation(), load_training()

    async def play():
        env = FairSokoban({"render_mode": "vision"})
        system = (await env.system_prompt())["obs_str"]
        assert system.startswith("You are a Sokoban solver.") and "<prediction>" in system  # VAGEN's wm prompt
        for seed in (0, 77, 255):
            obs, info = await env.reset(seed)
            assert info["task_id"] == rows[seed].task_id and info["split"] == "validation"
            image = np.asarray(obs["multi_modal_input"]["<image>"][0])
            assert obs["obs_str"].count("<image>") == 1 and np.array_equal(image, render(rows[seed].board, "rgb_array"))
            moves = plan(image)
            obs, reward, done, info = await env.step(f"<observation></observation><think></think><answer>"
                                                      f"{','.join(WORDS[a] for a in moves[:3])}</answer>"
                                                      f"<prediction></prediction>")
            after = board_from_image(np.asarray(obs["multi_modal_input"]["<image>"][0]))
            expected = rows[seed].board
            for action in moves[:3]:
                expected = expected.move(action)[0]
            assert after == expected and info["actions_taken"] == min(3, len(moves))
            assert (done, reward) == ((True, 1.1) if len(moves) <= 3 else (False, 0.1))
        with pytest.raises(ValueError, match="seed 256 names no validation board"):
            await env.reset(256)
        training = FairSokoban({"render_mode": "text", "fairness_split": "train"})
        for seed, position in ((0, 0), (4999, 4999), (5003, 3)):
            _, info = await training.reset(seed)
            assert info["task_id"] == train[position].task_id and training.row == train[position]

    asyncio.run(play())
    with pytest.raises(ValueError, match="dim_room must be"):
        FairSokoban({"dim_room": [7, 7]})
    with pytest.raises(ValueError, match="fairness_split must be"):
        FairSokoban({"fairness_split": "test"})


def test_registration_both_ways_and_the_ready_config_expand_to_the_256_boards(vagen):
    import importlib

    import yaml
    from vagen.envs.registry import get_env_cls
    from vagen.evaluate.run_eval import _expand_jobs, _load_config, _parse_env_specs
    from omegaconf import OmegaConf

    from sokoban_tools.integrations import vagen as integration
    from sokoban_tools.integrations.vagen.env import FairSokoban

    integration.register()  # the evaluator's way
    assert get_env_cls(integration.ENV_NAME) is FairSokoban
    # the training side's way: its agent loop resolves env_registry entries with importlib
    entries = yaml.safe_load(integration.ENV_REGISTRY.read_text())["env_registry"]
    assert entries == integration.ENV_REGISTRY_ENTRY
    module, name = entries[integration.ENV_NAME].rsplit(".", 1)
    assert getattr(importlib.import_module(module), name) is FairSokoban
    merged = OmegaConf.merge(OmegaConf.load(vagen / "vagen" / "configs" / "env_registry.yaml"),
                             OmegaConf.load(integration.ENV_REGISTRY))
    assert merged.env_registry.Sokoban == "vagen.envs.sokoban.sokoban_env.Sokoban"
    assert merged.env_registry.SokobanFairness == integration.ENV_CLASS

    cfg = OmegaConf.to_container(_load_config(str(integration.EVAL_CONFIG), []), resolve=True)
    jobs = _expand_jobs(_parse_env_specs(cfg), 0, str(integration.HERE), cfg["experiment"]["default_max_turns"])
    assert [job["data"]["seed"] for job in jobs] == list(range(256))
    assert {job["data"]["env_cls"] for job in jobs} == {FairSokoban}
    # everything but the environment and its seeds is VAGEN's own Sokoban example
    example = OmegaConf.to_container(OmegaConf.load(vagen / "examples" / "evaluate" / "sokoban" / "config.yaml"))
    ours = cfg["envs"][0]
    assert {k: v for k, v in ours["config"].items() if not k.startswith("fairness_")} == example["envs"][0]["config"]
    assert (ours["max_turns"], ours["chat_config"]) == (example["envs"][0]["max_turns"], example["envs"][0]["chat_config"])
    assert cfg["backends"]["openai"]["model"] == example["backends"]["openai"]["model"]
