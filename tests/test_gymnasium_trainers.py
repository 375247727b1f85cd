"""SokobanFairness-v1 under a real trainer, stable-baselines3: the seven ways it got in a training loop's way.

Each test is one of issue 39's seven: a pass label through any wrapper or vector, any
number of validation passes through a logged vector, a second ``learn()``, training rows
labelled with the learner's progress, the fair shards as a stable-baselines3 ``VecEnv``,
an env-step schedule that ``score`` checks, and the one-hot grid observation.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest


from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import add_costs, manifest_path, read_manifest
from sokoban_tools.records.tasks import load_training, load_validation
from sokoban_tools.runtime.env import render
from sokoban_tools.runtime.sampler import TrainingSampler

ID = "sokoban_tools.integrations.gymnasium_env:SokobanFairness-v1"


class RandomPolicy:
    """What stable-baselines3's evaluate_policy asks of a model: predict()."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def predict(self, observations, state=None, episode_start=None, deterministic=False):
        return self.rng.integers(0, 5, len(observations)), None


def passes(log) -> dict[int, list[str]]:
    """The boards of each validation update in the log."""
    out: dict[int, list[str]] = {}
    for record in read_episodes(log):
        if record.phase == "validation":
            out.setdefault(record.update, []).append(record.task_id)
    return out


def test_evaluate_policy_plays_any_number_of_labelled_passes_through_a_logged_vector_and_a_lost_label_is_refused(
        sb3, tmp_path):
    from stable_baselines3.common.evaluation import evaluate_policy

    from sokoban_tools.integrations.gymnasium_env.sb3 import make_sb3_vec

    log = tmp_path / "eval.jsonl"
    envs = make_sb3_vec(16, seed=0, split="validation", episode_log=log, method="random", trained=False)
    policy = RandomPolicy(1)
    envs.env_method("set_update", 100)  # through stable-baselines3's Monitor wrapper
    evaluate_policy(policy, envs, n_eval_episodes=256, warn=False)
    envs.set_options({"update": 200})  # reset(options=...) of every environment
    evaluate_policy(policy, envs, n_eval_episodes=256, warn=False)
    envs.env_method("set_update", 300)
    evaluate_policy(policy, envs, n_eval_episodes=256, warn=False)
    ids = sorted(row.task_id for row in load_validation())
    assert {update: sorted(boards) for update, boards in passes(log).items()} == {100: ids, 200: ids, 300: ids}
    envs.set_attr("update", 400)  # sets the Monitor's attribute: the environment never sees it
    with pytest.raises(RuntimeError, match=r"played its boards of the validation pass at update 300.*label it first"):
        evaluate_policy(policy, envs, n_eval_episodes=256, warn=False)
    assert sorted(passes(log)) == [100, 200, 300]  # nothing under a wrong label, nothing dropped
    envs.close()


def play_pass(env, label: int, action: int) -> None:
    """One pass of ``action`` over the 256 boards, labelled ``label`` through ``reset(options=...)``."""
    env.reset(options={"update": label})
    for board in range(256):
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
        if board < 255:
            env.reset()


def test_a_pass_under_an_update_already_logged_is_refused_through_gymnasium_make_not_dropped(sb3, tmp_path):
    import gymnasium

    log = tmp_path / "twice.jsonl"
    env = gymnasium.make(ID, split="validation", episode_log=log, method="noop", trained=False)
    play_pass(env, 5, 0)  # the label passes Gymnasium's wrappers
    with pytest.raises(RuntimeError, match="already holds a validation pass of method 'noop', run '0' at update 5"):
        env.reset(options={"update": 5})
    assert sorted(passes(log)[5]) == sorted(row.task_id for row in load_validation())
    play_pass(env, 6, 0)  # a new label starts the next pass
    assert sorted(passes(log)) == [5, 6]
    env.close()


PASS_IN_A_PROCESS = """
import sys, gymnasium
env = gymnasium.make("sokoban_tools.integrations.gymnasium_env:SokobanFairness-v1", split="validation",
                     episode_log=sys.argv[1], method="noop", trained=False, update=0)
env.reset()
for board in range(256):
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(0)
        done = terminated or truncated
    if board < 255:
        env.reset()
env.close()
"""


def test_the_same_pass_from_a_second_process_is_refused_before_anything_is_written(sb3, tmp_path):
    """The log, not the process, is the truth: the same script run twice on one log (issue 50's 15)."""
    import subprocess
    import sys

    from conftest import REPO

    log = tmp_path / "twice.jsonl"
    first = subprocess.run([sys.executable, "-c", PASS_IN_A_PROCESS, str(log)], cwd=REPO, capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    before = log.read_bytes()
    second = subprocess.run([sys.executable, "-c", PASS_IN_A_PROCESS, str(log)], cwd=REPO, capture_output=True,
                            text=True, timeout=600)
    assert second.returncode == 1
    assert "already holds a validation pass of method 'noop', run '0' at update 0" in second.stderr, second.stderr
    assert "episode_log" in second.stderr and "set_run" in second.stderr  # the Gymnasium arguments to change
    assert log.read_bytes() == before  # nothing written: 256 rows at update 0, not 512
    assert len(passes(log)[0]) == 256


def test_a_new_label_in_the_middle_of_a_pass_is_refused_and_the_pass_can_be_finished(sb3, tmp_path):
    """Issue 50's 16: a new label after 20 of 256 boards would leave a partial pass."""
    import gymnasium

    log = tmp_path / "partial.jsonl"
    env = gymnasium.make(ID, split="validation", episode_log=log, method="noop", trained=False, update=0)
    for board in range(20):
        env.reset()
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(0)
            done = terminated or truncated
    for label in ({"update": 1}, {"run": "1"}):
        with pytest.raises(RuntimeError, match=r"has logged 20 of its 256 boards .* at update 0.*label was not taken"):
            env.reset(options=label)
    assert len(passes(log)[0]) == 20 and set(passes(log)) == {0}
    for board in range(20, 256):  # the pass goes on where it was, under its own label
        env.reset()
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(0)
            done = terminated or truncated
    play_pass(env, 1, 0)
    assert {update: len(set(boards)) for update, boards in passes(log).items()} == {0: 256, 1: 256}
    env.close()


def test_a_second_pass_of_the_same_model_is_another_run_through_evaluate_policy_and_scores(sb3, tmp_path):
    from stable_baselines3.common.evaluation import evaluate_policy

    from sokoban_tools.evaluation.score import score
    from sokoban_tools.integrations.gymnasium_env.sb3 import make_sb3_vec

    log = tmp_path / "again.jsonl"
    envs = make_sb3_vec(16, seed=0, split="validation", episode_log=log, method="random", trained=False, update=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # make_sb3_vec's Monitor: evaluate_policy has nothing to warn about
        evaluate_policy(RandomPolicy(1), envs, n_eval_episodes=256)
    envs.env_method("set_run", "pass-2")  # the same model, the same update, another pass: no new environment
    evaluate_policy(RandomPolicy(2), envs, n_eval_episodes=256)
    envs.close()
    runs = {}
    for record in read_episodes(log):
        runs.setdefault((record.run, record.update), set()).add(record.task_id)
    assert {key: len(boards) for key, boards in runs.items()} == {("0", 0): 256, ("pass-2", 0): 256}
    report = score([log])
    assert sorted(entry["run"] for entry in report["schedule"]) == ["0", "pass-2"]


def test_learn_twice_on_a_logged_training_vector_abandons_the_cut_episodes_unlogged_and_counts_them(sb3, tmp_path):
    from sokoban_tools.integrations.gymnasium_env.sb3 import make_sb3_vec

    log = tmp_path / "train.jsonl"
    envs = make_sb3_vec(2, seed=3, observation="grid", episode_log=log, method="PPO")
    model = sb3.PPO("MlpPolicy", envs, n_steps=37, batch_size=74, n_epochs=1, seed=3, device="cpu")
    model.learn(74)
    model.learn(74)  # reset_num_timesteps=True: stable-baselines3 resets the vector mid-episode
    cut = sum(envs.get_attr("cut_episodes"))
    assert cut >= 1  # 37 steps per environment ends no rollout on an episode's end
    records = read_episodes(log)
    assert records and all(r.phase == "training" for r in records)
    assert sum(len(r.moves) for r in records) <= 4 * 74  # finished episodes only
    envs.close()


def test_training_rows_carry_the_learners_env_steps_not_the_samplers_draw(sb3, tmp_path):
    from sokoban_tools.integrations.gymnasium_env.vector import SokobanFairnessVectorEnv
    from sokoban_tools.training.ppo import ROLLOUT, SETTINGS, PPOLearner

    log = tmp_path / "progress.jsonl"
    envs = SokobanFairnessVectorEnv(4, observation="grid", episode_log=log, method="PPO", update=0,
                                    autoreset_mode="SameStep")
    learner = PPOLearner(envs, 0, {**SETTINGS, "batch_size": 64, "n_epochs": 1})
    learner.train_until(4 * ROLLOUT * 12, lambda done: None)
    labels = sorted({r.update for r in read_episodes(log)})
    assert labels[0] == 0 and len(labels) >= 3  # a learning curve: the env steps when each episode began
    assert all(label % (4 * ROLLOUT) == 0 for label in labels)  # rollouts of 4 x 16 steps
    assert max(labels) <= learner.env_steps
    envs.close()


def test_the_sb3_vector_splits_one_seeded_fair_draw_between_its_shards(sb3):
    from sokoban_tools.integrations.gymnasium_env.sb3 import make_sb3_vec

    envs = make_sb3_vec(4, seed=9, batch_size=8)
    assert type(envs).__name__ == "DummyVecEnv"
    envs.reset()
    ids = [row.task_id for row in load_training()]
    draw = TrainingSampler(ids, 8, 1, 9).next_batch().task_ids  # environment i plays positions i and i + 4
    assert [env.unwrapped.row.task_id for env in envs.envs] == list(draw[:4])
    assert [env.unwrapped.reset()[1]["task_id"] for env in envs.envs] == list(draw[4:])
    envs.close()


def test_an_env_step_schedule_is_written_in_env_steps_and_score_checks_the_nominal_passes(sb3, tmp_path):
    import gymnasium

    from sokoban_tools.evaluation.score import score
    from sokoban_tools.records.budget import ENV_STEPS_COST, StepSchedule

    schedule = StepSchedule(total=100_000, every=50_000)
    assert schedule.points() == [0, 50_000, 100_000]
    assert schedule.due(49_152, 51_200) == [50_000] and schedule.due(98_304, 100_352) == [100_000]
    log = tmp_path / "steps.jsonl"
    env = gymnasium.make(ID, split="validation", episode_log=log, method="PPO", schedule=schedule)
    settings = read_manifest(manifest_path(log))["settings"]
    assert (settings["update_budget.total_training_steps"], settings["evaluation.frequency"],
            settings["evaluation.before_training"]) == (100_000, 50_000, True)
    for label in schedule.points():
        play_pass(env, label, 1)
    env.close()
    add_costs(log, {ENV_STEPS_COST: ("env steps", 100_352)})  # the actual count, beside the nominal budget
    (entry,) = score([log])["schedule"]
    assert entry["missing"] == [] and entry["unexpected"] == [] and not entry["stopped_early"]
    assert read_manifest(manifest_path(log))["costs"][ENV_STEPS_COST]["value"] == 100_352
    with pytest.raises(ValueError, match="beyond the budget"):
        StepSchedule(total=10, every=20)


def test_the_grid_observation_is_the_one_hot_of_the_cells_the_image_shows_and_the_checker_passes(sb3):
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gymnasium.make(ID, split="validation", observation="grid")
        check_env(env.unwrapped)
    assert env.observation_space == gymnasium.spaces.Box(0, 1, (7, 6, 6), np.uint8)
    obs, _ = env.reset(seed=0)
    for _ in range(40):
        assert obs.dtype == np.uint8 and obs.shape == (7, 6, 6)
        assert (obs.sum(axis=0) == 1).all()  # exactly one class per cell
        assert np.array_equal(obs.argmax(axis=0), render(env.unwrapped.board, "state"))
        obs, _, terminated, truncated, _ = env.step(int(env.action_space.sample()))
        if terminated or truncated:
            obs, _ = env.reset()
    assert gymnasium.make(ID).observation_space.shape == (96, 96, 3)  # the default is the image, unchanged
    with pytest.raises(ValueError, match="observation must be one of rgb, grid"):
        gymnasium.make(ID, observation="pixels")


def test_sb3_settings_state_a_learner_as_train_states_its_own_and_refuse_what_they_cannot_state(sb3):
    from sokoban_tools.integrations.gymnasium_env.sb3 import make_sb3_vec, sb3_costs, sb3_settings
    from sokoban_tools.training.train import NETWORK, settings

    envs = make_sb3_vec(2, seed=0, observation="grid")
    model = sb3.PPO("MlpPolicy", envs, n_steps=8, batch_size=16, seed=0, device="cpu",
                    policy_kwargs={"net_arch": NETWORK})
    assert sb3_settings(model, deterministic=True) == settings("ppo")  # key for key, value for value
    sampled = sb3_settings(model, deterministic=False)
    assert sampled["decoding.validation.do_sample"] is True and sampled["decoding.validation.temperature"] == 1.0
    small = sb3.A2C("MlpPolicy", envs, seed=0, device="cpu")
    assert sb3_settings(small)["initial_weights.model"].startswith("MLP [64, 64]")  # stable-baselines3's default
    with pytest.raises(TypeError, match="on-policy"):
        sb3_settings(sb3.DQN("MlpPolicy", envs.envs[0], device="cpu"))
    with pytest.raises(TypeError, match="deterministic"):
        sb3_settings(model, deterministic="yes")
    model.learn(16)
    assert sb3_costs(model, 1.5) == {"cpu_seconds": ("CPU-seconds", 1.5), "training_env_steps": ("env steps", 16)}
    envs.close()
