"""Drive a patched verl-agent tree's validation with a policy that reads the model's inputs.

Helper for tests (not a test file). ``test_evaluate.py`` runs it as a script::

    python tests/verl_agent_served_run.py '{"tree": ..., "work": ...}'

It composes the tree's ``ppo_trainer.yaml`` from ``run_sokoban.sh``'s overrides plus
``env.fairness=true`` (as ``verl_agent_run.py`` does) and, for the text turn,
``env.sokoban.mode`` and ``env.history_length`` (``"mode"``, ``"history_length"``),
calls the tree's real ``make_envs`` (workers in-process) and plays one validation pass
the way ``rollout_loop.vanilla_multi_turn_loop`` does: every turn, for every active
environment, the model's input is what ``preprocess_single_sample`` gives it, the
manager's text and, in ``rgb_array`` mode, verl-agent's own ``process_image`` of the
frame, and the answer is the loopback server's position-only policy of those pixels
or of the text's grid. The report (one
``RESULT {json}`` line) lists every input (text, image SHA-256) for the test to
compare with what ``evaluate`` sent, and where the patched trainer's log is.
"""

from __future__ import annotations

import hashlib
import json
import sys
import types
from functools import partial
from pathlib import Path

import numpy as np


def verl_agent_process_image(tree: Path):
    """verl-agent's own ``process_image``, its module imported with only ``from verl import
    DataProto`` stubbed (the trainer's batch type, which process_image never touches)."""
    if "verl" not in sys.modules or not hasattr(sys.modules["verl"], "DataProto"):
        stub = types.ModuleType("verl")
        stub.DataProto = type("DataProto", (), {})
        stub.__path__ = [str(tree / "verl")]  # its config folder stays reachable
        sys.modules["verl"] = stub
    from agent_system.multi_turn_rollout.utils import process_image
    return process_image


def main(args: dict) -> dict:
    tree, work = Path(args["tree"]), Path(args["work"])
    sys.path.insert(0, str(tree))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from hydra import compose, initialize_config_dir
    from torch.utils.data import DataLoader

    import sokoban_tools.integrations.verl_agent.hooks as integration
    from verl_agent_run import collate, launcher_overrides, placeholder_rows
    from sokoban_tools.integrations.served.demo_model import observation_policy, read_board, read_text_board

    process_image = verl_agent_process_image(tree)
    from agent_system.environments import make_envs

    integration.build_sokoban_envs = partial(integration.build_sokoban_envs, backend="local")
    rows = placeholder_rows(work)
    log = work / "trainer.jsonl"
    mode = args.get("mode", "rgb_array")
    turn = [f"env.sokoban.mode={mode}", f"env.history_length={args.get('history_length', 2)}"]
    inputs = []
    with initialize_config_dir(config_dir=str(tree / "verl" / "trainer" / "config"), version_base=None):
        launcher = [item for item in launcher_overrides(tree) if not item.startswith("env.sokoban.mode=")]
        config = compose("ppo_trainer", overrides=launcher + [
            "env.fairness=true", f"env.fairness_log={log}", *turn])
        envs, val_envs = make_envs(config)
        dataloader = DataLoader(rows, batch_size=config.data.val_batch_size, shuffle=False, drop_last=False,
                                collate_fn=collate)
        for batch in integration.validation_batches(dataloader, val_envs, 0):
            size = len(batch["data_source"])
            obs, _ = val_envs.reset(kwargs=None)
            is_done = np.zeros(size, dtype=bool)
            for _ in range(config.env.max_steps):  # the rollout loop's turns
                texts = []
                for i in range(size):
                    if mode == "rgb_array":
                        image = np.asarray(process_image(obs["image"][i]))
                        answer = observation_policy(read_board(image))
                        seen = [hashlib.sha256(image.tobytes()).hexdigest(), list(image.shape)]
                    else:
                        assert obs["image"] is None  # a text turn: the text alone reaches the model
                        answer = observation_policy(read_text_board(obs["text"][i]))
                        seen = ["", []]
                    texts.append(answer)
                    if not is_done[i]:
                        inputs.append([obs["text"][i], *seen, answer])
                obs, _, dones, _ = val_envs.step(texts)
                is_done |= dones
                if is_done.all():
                    break
        envs.envs.close()
        val_envs.envs.close()
    return {"log": str(log), "inputs": inputs, "method": str(config.env.fairness_method),
            "run": str(config.env.fairness_run)}


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(json.loads(sys.argv[1]))))
