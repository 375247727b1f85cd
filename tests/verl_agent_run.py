"""Drive a patched verl-agent tree as its trainer does, with a scripted model.

Helper for tests (not a test file). ``test_verl_agent_patched_trainer.py`` runs it as a script,
in the clone's venv and in the wheel's venv outside the clone, so both import
``sokoban_tools`` the way a trainer would::

    python tests/verl_agent_run.py '{"tree": ..., "work": ..., "val_batch_sizes": [64], ...}'

It composes the tree's ``ppo_trainer.yaml`` with Hydra from ``run_sokoban.sh``'s
overrides plus ``env.fairness=true`` (and ``extra_overrides``), calls the tree's real
``make_envs``, and plays:

* validation the way the patched ``_validate`` does: the batches of
  :func:`sokoban_tools.integrations.verl_agent.hooks.validation_batches` over a
  DataLoader of a 128-row placeholder Parquet, per batch size once for each of
  ``updates`` (default 0 and 5);
* one training step the way ``fit`` does (:func:`label_training_update`, then a rollout);

each batch size with its own log in ``work`` (``"log_per_size": false``: the one the
config names, relative to ``work``, the current folder);

each rollout as ``rollout_loop.vanilla_multi_turn_loop`` does it (every environment
stepped every turn, finished ones included; active masks). The scripted model plays
each board's stored solution but also writes malformed answers (no tags, an unknown
word, an empty answer, tags in the wrong order: action 0), answers without a think
block (the action counts) and, for every 13th environment, nothing usable at all. It
knows, independently of the environments, which boards it wins and with what return;
the rollouts are checked against that here, and the report (one ``RESULT {json}``
line) gives what the test compares with the published files.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from functools import partial
from pathlib import Path

import numpy as np

ACTION_WORDS = {1: "Up", 2: "down", 3: "LEFT", 4: "right"}
MALFORMED = ["I would push the box.", "<think>hm</think><action>jump</action>", "",
             "<think>🙂 İ</think><ACTION>stay</ACTION>", "<think>x</think></action>up<action>"]
PARQUET_ROWS = 128
KILLS: list[int] = []  # the turns before which an actor was killed


def launcher_overrides(tree: Path) -> list[str]:
    """``run_sokoban.sh``'s arguments to ``main_ppo``, as its shell passes them."""
    text = (tree / "examples" / "grpo_trainer" / "run_sokoban.sh").read_text(encoding="utf-8")
    variables = {"ENGINE": "vllm", "HOME": str(Path.home())}  # ENGINE=${1:-vllm}, run without arguments
    variables.update((name, value) for name, value in re.findall(r"^(\w+)=(\d+(?:\.\d+)?)\b", text, re.M))
    command = text.split("python3 -m verl.trainer.main_ppo", 1)[1].replace("\\\n", " ").replace("$@", "")
    return shlex.split(re.sub(r"\$\{?(\w+)\}?", lambda m: variables[m.group(1)], command))


def placeholder_rows(work: Path) -> list[dict]:
    """A 128-row Parquet as ``examples/data_preprocess/prepare.py --mode visual`` writes it
    (its rows only size the batches), read back row by row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = work / "test.parquet"
    rows = [{"data_source": "visual", "prompt": [{"role": "user", "content": "<image>"}], "ability": "agent",
             "extra_info": {"split": "test", "index": i}} for i in range(PARQUET_ROWS)]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return pq.read_table(path).to_pylist()


def collate(rows: list[dict]) -> dict:
    """verl's collate_fn for rows without tensors: one object array per key."""
    return {key: np.array([row[key] for row in rows], dtype=object) for key in rows[0]}


class ScriptedModel:
    """Answers for every environment of a rollout; knows which boards it wins and how."""

    def __init__(self, solutions: list[list[int]], max_steps: int):
        self.plans = solutions
        self.next = [0] * len(solutions)
        self.turns_to_win = [None] * len(solutions)
        self.max_steps = max_steps

    def answers(self, turn: int) -> tuple[list[str], list[int]]:
        """The answers of ``turn`` and the action each should become."""
        texts, actions = [], []
        for i, plan in enumerate(self.plans):
            if self.next[i] == len(plan):  # won: still stepped, as verl-agent steps finished environments
                text, action = "<think>done</think><action>left</action>", 3
            elif i % 13 == 0 or (i + turn) % 7 == 3:
                text, action = MALFORMED[(i + turn) % len(MALFORMED)], 0
            else:
                action = plan[self.next[i]]
                word = ACTION_WORDS[action]
                if (i + turn) % 5 == 1:
                    text = f"<ACTION>{word}</ACTION>"  # no think block: invalid, but the action counts
                else:
                    text = f"<think>step {turn}</think>I move.<action> {word} </action><action>still</action>"
                self.next[i] += 1
                if self.next[i] == len(plan):
                    self.turns_to_win[i] = turn + 1
            texts.append(text)
            actions.append(action)
        return texts, actions

    @property
    def won(self) -> list[bool]:
        return [t is not None and t <= self.max_steps for t in self.turns_to_win]

    @property
    def returns(self) -> list[float]:
        # -0.1 a turn, +1 and +10 at the winning push; a lost board never reaches its target
        return [11 - 0.1 * t if won else -0.1 * self.max_steps for t, won in zip(self.turns_to_win, self.won)]


def kill_and_wait_for_restart(workers) -> None:
    """Kill the last Ray actor of ``workers`` and wait until Ray has restarted it empty: what a
    trainer meets when an actor dies while its model generates between two steps."""
    import time

    import ray

    actor = workers.actors[-1]
    ray.kill(actor, no_restart=False)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if all(env is None for env in ray.get(actor.__ray_call__.remote(lambda held: held.envs), timeout=5)):
                return
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            pass  # not restarted yet
        time.sleep(0.05)
    raise AssertionError("Ray did not restart the killed actor within 60 s")


def rollout(manager, batch_size: int, solutions: dict, max_steps: int, kill_at: int | None = None) -> dict:
    """One call of ``vanilla_multi_turn_loop``'s environment side, checked against the model;
    ``kill_at``: the turn before whose step an actor is killed and restarted empty."""
    from agent_system.environments.prompts import SOKOBAN_TEMPLATE_NO_HIS, SOKOBAN_VISUAL_TEMPLATE
    from sokoban_render import render_rgb
    from sokoban_tools.runtime.env import render

    obs, infos = manager.reset(kwargs=None)
    assert len(obs["text"]) == batch_size, (len(obs["text"]), batch_size)  # the loop's own assertion
    task_ids = list(manager.envs.task_ids)
    boards = [solutions[task][0] for task in task_ids]
    images = obs["anchor"]  # the image, or in text mode the text grid
    if manager.envs.mode == "rgb_array":
        assert images.shape == (batch_size, 96, 96, 3) and images.dtype == np.uint8 and obs["image"] is images
        assert all(np.array_equal(image, render_rgb(board.room_fixed, board.room_state()))
                   for image, board in zip(images, boards))
        assert obs["text"] == [SOKOBAN_VISUAL_TEMPLATE] * batch_size
    else:  # verl-agent's default mode: the text grid in the prompt, no image
        assert obs["image"] is None and list(images) == [render(board, "tiny_rgb_array") for board in boards]
        assert obs["text"] == [SOKOBAN_TEMPLATE_NO_HIS.format(current_observation=grid) for grid in images]
    model = ScriptedModel([solutions[task][1] for task in task_ids], max_steps)
    is_done = np.zeros(batch_size, dtype=bool)
    episode_rewards = np.zeros(batch_size, dtype=np.float32)
    total_batch_list = [[] for _ in range(batch_size)]
    total_infos = [[] for _ in range(batch_size)]
    for turn in range(max_steps):
        active = np.logical_not(is_done)
        texts, actions = model.answers(turn)
        if turn == kill_at:
            kill_and_wait_for_restart(manager.envs.workers)
            KILLS.append(turn)
        next_obs, rewards, dones, infos = manager.step(texts)
        assert rewards.shape == (batch_size,) and dones.shape == (batch_size,)
        for i, action in enumerate(actions):
            moved = not np.array_equal(next_obs["anchor"][i], images[i])
            assert action != 0 or not moved, f"environment {i}: action 0 moved the player"
        episode_rewards[active] += rewards[active]
        for i in range(batch_size):
            total_batch_list[i].append({"active_masks": bool(active[i])})
            total_infos[i].append(infos[i])
        is_done = np.logical_or(is_done, dones)
        images = next_obs["anchor"]
        if is_done.all():
            break
    success = manager.success_evaluator(total_infos=total_infos, total_batch_list=total_batch_list,
                                        episode_rewards=episode_rewards, episode_lengths=None)
    assert list(success["success_rate"].astype(bool)) == model.won
    assert np.allclose(episode_rewards, model.returns, atol=1e-4), (episode_rewards, model.returns)
    return {"task_ids": task_ids, "won": model.won, "returns": model.returns}


def main(args: dict) -> dict:
    tree, work = Path(args["tree"]), Path(args["work"])
    sys.path.insert(0, str(tree))
    from hydra import compose, initialize_config_dir
    from torch.utils.data import DataLoader

    import sokoban_tools.integrations.verl_agent.hooks as integration
    from agent_system.environments import make_envs
    from sokoban_tools.rules.board import from_lurd
    from sokoban_tools.records.boards import load_boards

    if args.get("backend", "ray") != "ray":  # the workers in this process: 384 actors do not fit a test machine
        integration.build_sokoban_envs = partial(integration.build_sokoban_envs, backend=args["backend"])
    source = {"dataset_dir": args.get("dataset_dir"), "hub_revision": args.get("hub_revision")}
    solutions = {}
    for name in ("fairness/evaluation.jsonl", "fairness/train.jsonl"):
        rows, _ = load_boards(name, **source)
        solutions.update((row.task_id, (row.board, from_lurd(row.shortest_solution))) for row in rows)
    rows = placeholder_rows(work)
    overrides = launcher_overrides(tree)
    if "mode" in args:  # the launcher's env.sokoban.mode replaced, as a user edits run_sokoban.sh
        overrides = [item for item in overrides if not item.startswith("env.sokoban.mode=")]
        overrides.append(f"env.sokoban.mode={args['mode']}")
    report = {"overrides": overrides, "validation": {}, "package": integration.__file__}
    with initialize_config_dir(config_dir=str(tree / "verl" / "trainer" / "config"), version_base=None):
        for size in args["val_batch_sizes"]:
            own_log = [f"env.fairness_log={work / f'episodes-{size}.jsonl'}"] if args.get("log_per_size", True) else []
            config = compose("ppo_trainer", overrides=report["overrides"] + [
                "env.fairness=true", *own_log, f"data.val_batch_size={size}", *args.get("extra_overrides", [])])
            log = Path(config.env.fairness_log).resolve()
            envs, val_envs = make_envs(config)
            dataloader = DataLoader(rows, batch_size=config.data.val_batch_size, shuffle=False, drop_last=False,
                                    collate_fn=collate)
            passes = []
            for update in args.get("updates", [0, 5]):
                played, batch_rows = [], []
                kill = args.get("kill")  # {"chunk": c, "turn": t, "training_turn": t}: actors killed there
                for chunk, batch in enumerate(integration.validation_batches(dataloader, val_envs, update)):
                    batch_rows.append(len(batch["data_source"]))
                    kill_at = kill["turn"] if kill and chunk == kill["chunk"] else None
                    played.append(rollout(val_envs, batch_rows[-1], solutions, config.env.max_steps, kill_at))
                passes.append({"update": update, "batch_rows": batch_rows,
                               **{key: sum((chunk[key] for chunk in played), []) for key in played[0]}})
            report["validation"][size] = {"log": str(log), "passes": passes, "method": config.env.fairness_method,
                                          "run": config.env.fairness_run}
            if size == args["val_batch_sizes"][0]:
                integration.label_training_update(envs, 7)
                batch = config.data.train_batch_size * config.env.rollout.n
                report["training"] = rollout(envs, batch, solutions, config.env.max_steps,
                                             args["kill"]["training_turn"] if args.get("kill") else None)
                # what fit measures of a step, as verl names it; two GPUs
                integration.record_costs(envs, COSTS, 2)
            report["workers"] = type(val_envs.envs.workers).__name__
            report["kills"] = len(KILLS)
            envs.envs.close()
            val_envs.envs.close()
    return report


COSTS = {"timing_s/step": 3.5, "timing_s/gen": 2.0, "perf/total_num_tokens": 4096, "critic/score/mean": 0.5}


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    print("RESULT " + json.dumps(main(json.loads(sys.argv[1]))))
