"""The TRL route without a model: the dataset, the rollout function's turns and slots, the log.

A scripted "model" answers through the same code a real one does (:class:`~sokoban_tools.
integrations.trl.policy.Policy`): one that plays each board's stored solution wins every board,
in training and in a validation pass that ``score``, ``score --verify``, ``compare`` and
``leaderboard --add`` take like any other; one that answers garbage loses every board, each
answer counted invalid as verl-agent's own projection counts it. The rollout function's prompts
are verl-agent's ``SokobanEnvironmentManager``'s, turn by turn, for the same answers.
"""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from importlib import metadata
from types import SimpleNamespace

from packaging.requirements import Requirement

import numpy as np
import pytest

from conftest import REPO
from sokoban_tools.evaluation import compare, leaderboard, score
from sokoban_tools.evaluation.replay import verify_log
from sokoban_tools.integrations.served.demo_model import answer_text, read_text_board
from sokoban_tools.integrations.served.prompt import TEXT_PROMPT_NO_HISTORY
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import ManifestError, manifest_path, read_manifest
from sokoban_tools.records.run import OpenRun
from sokoban_tools.records.rows import DataError
from sokoban_tools.records.tasks import load_training, load_validation
from sokoban_tools.rules.board import from_lurd
from sokoban_tools.runtime.env import FairSokobanEnv, render
from sokoban_tools.runtime.sampler import TrainingSampler
from test_verl_agent_patched_trainer import UPSTREAM, require_upstream
from unavailable import unavailable

try:  # the trl extra
    from sokoban_tools.integrations.trl.dataset import PROMPT, PromptBoards, first_turn, training_dataset
    from sokoban_tools.integrations.trl.policy import Generation
    from sokoban_tools.integrations.trl.rollout import TURN_REWARD, VerlAgentRollout, verl_agent_reward
    from sokoban_tools.integrations.trl.run import RunSettings, TrlRun, grpo_config
    from sokoban_tools.integrations.trl.schedule import due
    from sokoban_tools.integrations.trl.tool_env import TOOL_OBSERVATION, TOOL_TURN, MoveTools, tool_dataset
except ImportError as error:
    MISSING = f"the trl extra is not installed ({error}): pip install -e '.[trl]'"
else:
    MISSING = None

VALIDATION = load_validation(REPO / "fairness" / "evaluation.jsonl")
TRAINING = load_training(REPO / "fairness" / "train.jsonl")
GARBAGE = "I would push the box."


@pytest.fixture(autouse=True)
def trl_installed():
    if MISSING:
        unavailable(MISSING)


class ScriptedPolicy:
    """A "model" answering from the prompt alone: ``decide(prompt_text)`` gives the answer. Its token
    ids are the prompt's and the answer's UTF-8 bytes, so a test reads back what each turn showed."""

    def __init__(self, decide):
        self.decide = decide

    def answer(self, chats, decoding):
        return [Generation(list(chat[-1]["content"].encode()), list(self.decide(chat[-1]["content"]).encode()) + [0],
                           self.decide(chat[-1]["content"])) for chat in chats]


def solution_plans(rows) -> dict:
    """Every position on each row's stored solution, with the move the solution makes there."""
    plan = {}
    for row in rows:
        env = FairSokobanEnv("state")
        env.start(row)
        for action in from_lurd(row.shortest_solution):
            plan[env.board] = action
            env.play(action)
    return plan


def stored_solution_policy(rows) -> ScriptedPolicy:
    plan = solution_plans(rows)
    return ScriptedPolicy(lambda prompt: answer_text(plan[read_text_board(prompt)]))


def fake_trainer(slots: int, global_step: int = 0):
    """What the rollout function reads of a GRPOTrainer."""
    return SimpleNamespace(num_generations=slots, num_generations_eval=slots, model=SimpleNamespace(training=True),
                           state=SimpleNamespace(global_step=global_step),
                           processing_class=SimpleNamespace(eos_token_id=0))


def small(**changes) -> RunSettings:
    return RunSettings(**{"model": "scripted", "group_size": 2, "groups_per_update": 3, "updates": 2, **changes})


def rollout(tmp_path, settings, policy, name="trl.jsonl", update=0):
    """One update of ``settings`` played by ``policy``: the run, the rows drawn and TRL's output."""
    run = TrlRun(tmp_path / name, settings, run="scripted")
    dataset, boards = training_dataset(TRAINING, settings.groups_per_update, settings.group_size, settings.seed,
                                       settings.updates, settings.history_length)
    prompts = [prompt for prompt in dataset[PROMPT][:settings.groups_per_update] for _ in range(settings.slots)]
    output = VerlAgentRollout(run, boards, policy)(prompts, fake_trainer(settings.slots, update))
    run.close()
    return run, dataset, output


def test_the_dataset_is_one_first_turn_per_board_in_the_fair_samplers_draw_order_and_nothing_else():
    dataset, boards = training_dataset(TRAINING, 4, 8, 11, 3, 2)
    sampler = TrainingSampler([row.task_id for row in TRAINING], 4, 8, 11)
    drawn = [TRAINING[int(i)] for _ in range(3) for i in sampler.next_batch().group_task_indices]
    assert dataset.column_names == [PROMPT] and len(dataset) == 12
    assert dataset[PROMPT] == [first_turn(row, 2) for row in drawn]
    assert [boards.row(prompt).task_id for prompt in dataset[PROMPT]] == [row.task_id for row in drawn]
    for row, (message,) in zip(drawn, dataset[PROMPT]):
        # verl-agent's first-turn template filled with the board's grid, and nothing else
        assert message == {"role": "user", "content": TEXT_PROMPT_NO_HISTORY.format(
            current_observation=render(row.board, "tiny_rgb_array"))}
    with pytest.raises(ValueError, match="no training board's first turn"):
        boards.row([{"role": "user", "content": "hello"}])


def test_a_model_answering_the_stored_solution_wins_every_board_in_training_and_every_slot_is_a_turn(tmp_path):
    settings = small()
    drawn = TRAINING  # the plans cover every training board
    run, dataset, output = rollout(tmp_path, settings, stored_solution_policy(drawn), update=4)
    records = read_episodes(run.log)
    rows = [PromptBoards(TRAINING, 2).row(prompt) for prompt in dataset[PROMPT][:3]]
    assert [(r.task_id, r.phase, r.update, r.won) for r in records] == \
        [(row.task_id, "training", 5, True) for row in rows for _ in range(2)]
    assert all(r.moves == row.shortest_solution.upper() for r, row in zip(records, [x for x in rows for _ in "ab"]))
    slots, coef = settings.horizon, settings.invalid_action_penalty_coef
    assert len(output["prompt_ids"]) == len(output["completion_ids"]) == 3 * 2 * slots and output["logprobs"] is None
    for episode, record in enumerate(records):
        block = slice(episode * slots, (episode + 1) * slots)
        rewards, masks = output[TURN_REWARD][block], output["env_mask"][block]
        turns = len(record.moves)
        assert rewards[:turns] == [record.episode_return] * turns  # every answer valid: no penalty
        assert rewards[turns:] == [None] * (slots - turns) and all(m == [0] for m in masks[turns:])
        assert all(set(m) == {1} for m in masks[:turns])
    assert verl_agent_reward(None, output[TURN_REWARD]) == output[TURN_REWARD]
    assert verify_log(run.log).verified == 6  # the training records replay on their boards
    assert coef == 0.1


def test_a_model_answering_garbage_loses_every_board_each_answer_invalid_as_verl_agent_counts_it(tmp_path):
    actions, valids = verl_agent_projection()([GARBAGE])
    assert (actions, valids) == ([0], [0])  # verl-agent: no action, invalid
    settings = small(groups_per_update=2)
    run, _, output = rollout(tmp_path, settings, ScriptedPolicy(lambda prompt: GARBAGE))
    records = read_episodes(run.log)
    assert len(records) == 4
    assert all((r.won, r.actions, r.moves, r.episode_return) == (False, 0, "0" * 15, pytest.approx(-1.5))
               for r in records)
    assert output[TURN_REWARD] == [pytest.approx(-1.5 - 0.1)] * (4 * 15)  # every turn reached, every one penalised
    off = small(groups_per_update=2, invalid_action_penalty_coef=0.0)
    _, _, output = rollout(tmp_path, off, ScriptedPolicy(lambda prompt: GARBAGE), name="off.jsonl")
    assert output[TURN_REWARD] == [pytest.approx(-1.5)] * (4 * 15)
    assert read_manifest(manifest_path(tmp_path / "off.jsonl"))["settings"]["reward.invalid_action_penalty"] is False


def verl_agent_projection():
    """verl-agent's own sokoban_projection, loaded from its file (its package imports gym)."""
    require_upstream()
    spec = importlib.util.spec_from_file_location(
        "verl_agent_sokoban_projection", UPSTREAM / "agent_system/environments/env_package/sokoban/projection.py")
    projection = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(projection)
    return projection.sokoban_projection


def verl_agent_manager(rows, history_length: int):
    """verl-agent's own SokobanEnvironmentManager in text mode over our environments, one per row."""
    require_upstream()
    from omegaconf import OmegaConf

    sys.path.insert(0, str(UPSTREAM))
    try:
        from agent_system.environments.env_manager import SokobanEnvironmentManager
    except ImportError as missing:
        unavailable(f"verl-agent's manager cannot be imported: {missing}")
    finally:
        sys.path.remove(str(UPSTREAM))

    class Vector:
        mode = "tiny_rgb_array"

        def __init__(self):
            self.envs = [FairSokobanEnv("tiny_rgb_array", 15) for _ in rows]

        def reset(self):
            obs, infos = zip(*(env.reset(row) for env, row in zip(self.envs, rows)))
            return list(obs), list(infos)

        def step(self, actions):
            obs, rewards, dones, infos = zip(*(env.step(int(a)) for env, a in zip(self.envs, actions)))
            return list(obs), np.array(rewards), np.array(dones), list(infos)

    config = OmegaConf.create({"env": {"history_length": history_length}})
    return SokobanEnvironmentManager(Vector(), verl_agent_projection(), config)


def mixed(prompt: str) -> str:
    """Answers from the prompt alone: garbage every third step and wherever the box stands in an even
    column, a walk up after the sixth step, else the stored solution's move, with and without a think
    block; so some boards are won and some lost."""
    board = read_text_board(prompt)
    step = int(prompt.split("You are now at step ")[1].split(" ")[0]) if "You are now at step " in prompt else 1
    if step % 3 == 0 or board.box[1] % 2 == 0:
        return GARBAGE
    return answer_text(MIXED_PLAN.get(board, 1) if step <= 6 else 1, think=step % 2 == 1)


MIXED_PLAN = solution_plans(TRAINING)


@pytest.mark.parametrize("history_length", [2, 0])
def test_the_rollout_functions_prompts_are_verl_agents_managers_for_the_same_answers(tmp_path, history_length):
    settings = small(groups_per_update=8, history_length=history_length)
    run, dataset, output = rollout(tmp_path, settings, ScriptedPolicy(mixed))
    rows = [PromptBoards(TRAINING, history_length).row(p) for p in dataset[PROMPT][:8] for _ in range(2)]
    manager = verl_agent_manager(rows, history_length)
    observations, _ = manager.reset({})
    shown = [[] for _ in rows]
    done = np.zeros(len(rows), dtype=bool)
    for _ in range(15):
        texts = observations["text"]
        for i in np.flatnonzero(~done):
            shown[i].append(texts[i])
        observations, _, dones, _ = manager.step([mixed(text) for text in texts])
        done |= dones
    records = read_episodes(run.log)
    for i, record in enumerate(records):
        slots = output["prompt_ids"][i * 15:(i + 1) * 15][:len(record.moves)]
        assert [bytes(ids).decode() for ids in slots] == shown[i], f"episode {i} ({record.task_id})"
    assert any(r.won for r in records) and any(not r.won for r in records)  # both ends are compared
    assert any("Action 2: '" in text for turns in shown for text in turns) == (history_length > 0)


def test_a_validation_pass_of_the_stored_solutions_is_scored_verified_compared_and_added_like_any_run(tmp_path):
    logs = []
    for name in ("a.jsonl", "b.jsonl"):
        with TrlRun(tmp_path / name, small(), run="scripted") as run:
            run.validate(stored_solution_policy(VALIDATION), 0)
        logs.append(run.log)
    report = score.score([logs[0]], verify=True)
    (group,) = report["groups"]
    assert (group["method"], group["update"], group["boards"], group["wins"]) == ("TRL-GRPO", 0, 256, 256)
    assert report["verification"]["verified"] == 256
    manifest = read_manifest(manifest_path(logs[0]))
    settings, notes = manifest["settings"], manifest["notes"]
    assert (settings["rollout.group_size"], settings["update_budget.groups_per_update"],
            settings["update_budget.total_training_steps"], settings["initial_weights.model"]) == (2, 3, 2, "scripted")
    assert (settings["decoding.validation.temperature"], settings["decoding.training.temperature"]) == (0.4, 1.0)
    assert notes["trainer"].startswith("TRL 1.16.0 GRPOTrainer") and "rollout_func" in notes["turn"]
    assert notes["protocol_settings"] == "verl-agent's validation settings"
    comparison = compare.compare([logs[0]], [logs[1]])
    assert comparison["settings"]["checked"] and comparison["updates"][0]["difference"] == 0.0
    results = tmp_path / "results"
    results.mkdir()
    code = leaderboard.main([str(results), "--add", "trl-scripted", "--log", str(logs[0]), "--model", "none (scripted)",
                             "--submitted-by", "test", "--link", "https://example.org/trl"])
    assert code == 0 and (results / "trl-scripted" / "episodes.jsonl").is_file()


def test_the_manifest_names_what_the_run_changed_and_a_quick_look_says_so(tmp_path):
    with TrlRun(tmp_path / "quick.jsonl", small(horizon=2, validation_boards=3)) as run:
        records = run.validate(ScriptedPolicy(lambda prompt: GARBAGE), 0)
    assert [r.task_id for r in records] == [row.task_id for row in VALIDATION[:3]]
    assert all(r.moves == "00" for r in records)
    notes = read_manifest(manifest_path(run.log))["notes"]
    assert notes["boards"] == "the first 3 of the 256 validation boards: a quick look, NOT the protocol"
    assert "env.max_steps 2 (verl-agent: 15)" in notes["protocol_settings"]
    with pytest.raises(DataError, match=r"a TRL run validated on the first 3 boards .*without --validation-boards "
                                        r"\(score --quick-look shows the pass as it is, as no result\)"):
        score.score([run.log])
    looked = score.score([run.log], quick_look=True)
    (look,) = looked["quick_looks"]
    assert looked["groups"] == [] and (look["boards"], look["wins"], look["update"]) == (3, 0, 0)
    assert "Quick looks, no result" in score.render(looked)
    lines = run.log.read_bytes().splitlines(keepends=True)
    kept = tmp_path / "gap.jsonl"  # the quick look without its first board is no quick look
    kept.write_bytes(b"".join(lines[1:]))
    manifest_path(kept).write_bytes(manifest_path(run.log).read_bytes())
    with pytest.raises(DataError, match=r"gap\.jsonl: an incomplete validation pass .* misses 254 of the 256 "
                                        r"validation boards \(eval-0002, "):
        score.score([kept], quick_look=True)
    with pytest.raises(ValueError, match="already holds episodes"):
        TrlRun(tmp_path / "quick.jsonl", small())
    with TrlRun(tmp_path / "full.jsonl", small()) as other:
        other.validate(ScriptedPolicy(lambda prompt: GARBAGE), 0)
    with pytest.raises(ManifestError, match="action_horizon differs"):
        compare.check_settings(compare.read_manifests([OpenRun(run.log)]),
                               compare.read_manifests([OpenRun(other.log)]), ())


def test_the_grpo_config_plays_the_settings_and_the_schedule_is_verl_agents(tmp_path):
    settings = small(horizon=4)
    config = grpo_config(settings, tmp_path, micro_batches=2, use_cpu=True)
    assert (config.num_generations, config.per_device_train_batch_size, config.gradient_accumulation_steps) == \
        (8, 12, 2)
    assert (config.generation_batch_size, config.max_steps, config.shuffle_dataset) == (24, 2, False)
    assert (config.temperature, config.top_p, config.top_k, config.max_completion_length) == (1.0, 1.0, 0, 512)
    with pytest.raises(ValueError, match="micro_batches must divide"):
        grpo_config(settings, tmp_path, micro_batches=5)
    assert [u for u in range(1, 13) if due(u, 5, 12)] == [5, 10, 12] and [u for u in range(1, 4) if due(u, 0, 3)] == [3]
    with TrlRun(tmp_path / "x.jsonl", settings) as run:
        with pytest.raises(ValueError, match="num_generations is 16"):
            VerlAgentRollout(run, PromptBoards(TRAINING[:2], 2))([first_turn(TRAINING[0], 2)] * 16, fake_trainer(16))


def test_the_trl_extra_is_pinned_in_the_test_extra_and_installed_as_pinned():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert set(extras["trl"]) <= set(extras["test"])  # tests/install.py installs what the route needs
    for requirement in map(Requirement, extras["trl"]):
        assert requirement.specifier.contains(metadata.version(requirement.name), prereleases=True), requirement
    assert "trl==1.16.0" in extras["trl"]  # rollout_func is experimental: its contract is this release's


def test_the_tool_route_plays_the_boards_in_a_chat_logs_its_episodes_and_compare_refuses_to_pair_it_unasked(tmp_path):
    settings = small()
    dataset = tool_dataset(TRAINING, 3, 2, 0, 2)
    assert dataset.column_names == ["prompt", "task_id"] and len(dataset) == 6
    with pytest.raises(ValueError, match="observation=TOOL_OBSERVATION"):
        with TrlRun(tmp_path / "wrong.jsonl", settings) as run:
            MoveTools(run, TRAINING)
    with TrlRun(tmp_path / "tools.jsonl", settings, observation=TOOL_OBSERVATION, turn=TOOL_TURN) as run:
        factory = MoveTools(run, TRAINING)
        run.update = 1
        for task_id in dataset["task_id"][:3]:
            env, row = factory(), next(r for r in TRAINING if r.task_id == task_id)
            assert read_text_board(env.reset(task_id=task_id, prompt=dataset["prompt"][0])) == row.board
            results = [env.move(word) for word in ["jump", *(a for a in row.shortest_solution.lower())]]
            direction = {"u": "up", "d": "down", "l": "left", "r": "right"}
            assert results[0].endswith("The box is not on its target yet.")  # no such move: a turn spent
            env.reset(task_id=task_id)
            results = [env.move(direction[a]) for a in row.shortest_solution.lower()]
            assert results[-1].endswith("you won.") and env.move("up") == "The episode is over."
            assert env.get_reward() == env.get_reward() == pytest.approx(10.9 - 0.1 * (len(row.shortest_solution) - 1))
        run.validate(ScriptedPolicy(lambda prompt: GARBAGE), 0)
    records = [r for r in read_episodes(run.log) if r.phase == "training"]
    assert [(r.update, r.won, r.moves) for r in records] == \
        [(1, True, row.shortest_solution.upper()) for task_id in dataset["task_id"][:3]
         for row in TRAINING if row.task_id == task_id]
    assert verify_log(run.log).verified == 3 + 256
    with TrlRun(tmp_path / "turns.jsonl", settings) as other:
        other.validate(ScriptedPolicy(lambda prompt: GARBAGE), 0)
    with pytest.raises(ManifestError, match="image_processing.observation differs"):
        compare.check_settings(compare.read_manifests([OpenRun(run.log)]),
                               compare.read_manifests([OpenRun(other.log)]), ())
    assert read_manifest(manifest_path(run.log))["notes"]["turn"] == TOOL_TURN
