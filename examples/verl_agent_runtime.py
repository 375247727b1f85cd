# Run from the root of a clone of this repository: python -m examples.verl_agent_runtime
# What verl-agent's trainer does with its Sokoban environments, on the fair drop-in (real Ray actors).
import random

import ray

from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.integrations.verl_agent.envs import build_sokoban_envs

ray.init(num_cpus=2, include_dashboard=False)
env_kwargs = {"dim_room": [6, 6], "num_boxes": 1, "max_steps": 15, "search_depth": 30}
common = dict(mode="rgb_array", env_kwargs=env_kwargs, method="random-policy", run="seed0",
              episode_log="episodes.jsonl")
envs = build_sokoban_envs(0, 2, 2, is_train=True, **common)  # train_batch_size 2, rollout.n 2: 4 environments
val_envs = build_sokoban_envs(1000, 16, 1, is_train=False, **common)  # val_batch_size 16 (128 in the launchers)
policy = random.Random(0)


def rollout(envs, max_turns=15):
    """The trainer's loop: step every worker each turn, ignore finished ones, stop when all are done."""
    images, infos = envs.reset()  # (96, 96, 3) uint8 each
    active = [True] * len(images)
    for _ in range(max_turns):
        grids = envs.render(mode="tiny_rgb_array")  # the text verl-agent's prompts quote
        actions = [policy.randrange(5) for _ in grids]  # a random "model"; 0 stands for an unparseable answer
        images, rewards, dones, infos = envs.step(actions)
        active = [a and not d for a, d in zip(active, dones)]
        if not any(active):
            break


def validate(update):
    """One pass over the 256 validation boards: num_chunks resets, in stored order."""
    val_envs.begin_pass(update=update)
    for _ in range(val_envs.num_chunks):
        rollout(val_envs)
    records = val_envs.end_pass()  # one per board, in stored order
    return sum(r.won for r in records) / len(records)


print(f"update 0: validation success {validate(0):.3f}")
for update in range(2):
    rollout(envs)  # one training update's episodes; 2 adjacent workers share each board
    print(f"update {update + 1}: played {sorted(set(envs.task_ids))}")
envs.close()  # verl-agent releases workers between phases; the sampler stays in this process
print(f"update 2: validation success {validate(2):.3f}")
envs.reset()  # new actors, and the draw a run without the release would have made
print(f"next draw: {sorted(set(envs.task_ids))}")
envs.close()
val_envs.close()
log = read_episodes("episodes.jsonl")
print(f"episodes.jsonl: {len(log)} episodes, {sum(r.phase == 'validation' for r in log)} of them validation")
