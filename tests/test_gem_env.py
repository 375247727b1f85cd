"""The GEM environment (``sokoban-fairness:validation`` / ``:train``) through GEM's own make and vector.

Played with the demo model's position-only policy read from the text observation, a
pass of GEM's vector gives, board for board, the records ``evaluate --mode
tiny_rgb_array`` gives with the same policy, and every observation is a text that
``evaluate`` sent (verl-agent's text turn, which ``test_evaluate.py`` proves against
verl-agent's own manager on all 256 boards).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from conftest import REPO
from sokoban_tools.evaluation import score
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import manifest_path, read_manifest
from sokoban_tools.records.tasks import load_training, load_validation
from sokoban_tools.runtime.env import render
from sokoban_tools.runtime.sampler import TrainingSampler
from unavailable import unavailable

ROWS = load_validation(REPO / "fairness" / "evaluation.jsonl")
VALIDATION = "sokoban-fairness:validation"


@pytest.fixture(scope="module")
def gem():
    try:
        import gem
    except ImportError:
        unavailable("gem-llm is not installed; python tests/install.py installs it as the suite needs it "
                    "(without its dependencies: its math-verify extra pins an antlr4 hydra-core refuses)")
    import sokoban_tools.integrations.gem_env  # noqa: F401  registers the environments
    return gem


def policy(text: str) -> str:
    from sokoban_tools.integrations.served.demo_model import observation_policy, read_text_board
    return observation_policy(read_text_board(text))


def test_reset_seed_i_is_board_i_and_the_observation_is_verl_agents_text_turn(gem):
    env = gem.make(VALIDATION)
    for i in (0, 17, 255):
        text, info = env.reset(seed=i)
        assert info["task_id"] == ROWS[i].task_id
        assert render(ROWS[i].board, "tiny_rgb_array") in text and "Prior to this step" not in text
    text, reward, terminated, truncated, info = env.step("no action here")
    assert (reward, terminated, truncated, info["action"], info["action_is_valid"]) == (
        pytest.approx(-0.1), False, False, "Still", False)
    assert "Prior to this step, you have already taken 1 step(s)" in text and "Action 1: 'Still'" in text
    text, _ = env.reset()  # the next board of the shard
    assert render(ROWS[0].board, "tiny_rgb_array") in text  # after the last board the pass starts over
    with pytest.raises(ValueError, match="seed 256"):
        env.reset(seed=256)


def test_gems_vector_plays_each_board_once_a_pass_and_matches_evaluates_text_turn(gem, tmp_path, capsys,
                                                                                   monkeypatch):
    from sokoban_tools.integrations.served.demo_model import LoopbackServer, Script
    from sokoban_tools.integrations.served.evaluate import main as evaluate_main

    log = tmp_path / "gem.jsonl"
    n = 8
    envs = gem.make_vec([VALIDATION] * n, shard_count=n, episode_log=str(log), method="demo", run="gem")
    texts, _ = envs.reset()
    observations = Counter(texts)
    episodes = np.zeros(n, dtype=int)
    while episodes.min() < 256 // n:  # each plays its share; the fast ones play on, logging no board twice
        texts, rewards, terminated, truncated, _ = envs.step([policy(text) for text in texts])
        episodes += terminated | truncated
        observations.update(texts)
    assert episodes.max() > 256 // n
    for env in envs.envs:  # GEM 0.1.0's vector has no close()
        env.close()
    records = read_episodes(log)
    assert sorted(r.task_id for r in records) == sorted(row.task_id for row in ROWS)
    assert score.score([log])["groups"][0]["boards"] == 256
    manifest = read_manifest(manifest_path(log))
    assert manifest["settings"]["image_processing.observation"] == "tiny_rgb_array"
    assert manifest["settings"]["image_processing.history_length"] == 2 and manifest["notes"]["trainer"] == "gem"

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    served = tmp_path / "served.jsonl"
    with LoopbackServer(Script("mixed")) as server:
        code = evaluate_main(["--base-url", server.base_url, "--model", Script().model, "--log", str(served),
                              "--mode", "tiny_rgb_array"])
        assert code == 0, capsys.readouterr().err
    theirs = {r.task_id: (r.won, r.actions, round(r.episode_return, 6)) for r in read_episodes(served)}
    ours = {r.task_id: (r.won, r.actions, round(r.episode_return, 6)) for r in records}
    assert ours == theirs and 0 < sum(won for won, _, _ in ours.values()) < 256
    # every text the vector showed is one evaluate sent, and the other way round (each board's turns)
    assert set(observations) == {seen.text for seen in server.seen}


def test_the_pages_vector_example_logs_a_pass_that_scores_clean_since_its_manifest_declares_no_schedule(
        gem, tmp_path, monkeypatch):
    page_text = (REPO / "docs" / "gem.md").read_text(encoding="utf-8")
    [example] = [block for block in re.findall(r"```python\n(.*?)```", page_text, re.S) if "episode_log=" in block]
    monkeypatch.chdir(tmp_path)  # the page's runs/gem-grpo.jsonl
    page = {"gem": gem}
    exec(example, page)  # the page's own make_vec and reset, as a reader runs them
    envs, texts = page["envs"], page["texts"]
    episodes = np.zeros(len(texts), dtype=int)
    while episodes.min() < 256 // len(texts):
        texts, rewards, terminated, truncated, _ = envs.step([policy(text) for text in texts])
        episodes += terminated | truncated
    for env in envs.envs:
        env.close()
    report = score.score([tmp_path / "runs" / "gem-grpo.jsonl"])
    assert [(g["method"], g["update"], g["boards"]) for g in report["groups"]] == [("GRPO", 100, 256)]
    text = score.render(report)
    assert "MISSING" not in text and "UNEXPECTED" not in text
    assert "schedule not checked: its run manifest declares none" in text


def test_training_shards_of_a_seeded_vector_play_each_draw_once(gem):
    training = load_training(REPO / "fairness" / "train.jsonl")
    n = 4
    envs = gem.make_vec(["sokoban-fairness:train"] * n, shard_count=n, batch_size=8)
    _, infos = envs.reset(seed=11)
    played = [[info["task_id"]] for info in infos]  # each environment's boards, in order
    while min(map(len, played)) < 2:
        _, _, terminated, truncated, infos = envs.step(["<action>left</action>"] * n)
        for boards, info, done in zip(played, infos, terminated | truncated):
            if done:  # the vector reset it at once: info is the next board's
                boards.append(info["task_id"])
    draw = TrainingSampler([row.task_id for row in training], 8, 1, 11).next_batch()
    first = [training[int(i)].task_id for i in draw.task_indices]
    assert [boards[:2] for boards in played] == [first[i::n] for i in range(n)]
    for env in envs.envs:  # GEM 0.1.0's vector has no close()
        env.close()


def test_a_vector_not_built_from_seed_zero_is_refused_naming_the_fix(gem):
    with pytest.raises(ValueError, match="make_vec's default seed=0"):
        gem.make_vec([VALIDATION] * 4, shard_count=4, seed=3)
