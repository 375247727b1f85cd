# Run from the root of a clone of this repository: python -m examples.play_validation_board [OUT.gif]
import sys
import tempfile
from pathlib import Path

from sokoban_tools.rules.board import from_lurd
from sokoban_tools.rules.images import save_gif
from sokoban_tools.runtime.env import FairSokobanEnv
from sokoban_tools.records.tasks import load_validation

boards = load_validation("fairness/evaluation.jsonl")  # the validation split; checks its 256 rows and SHA-256
row = boards[0]
env = FairSokobanEnv(mode="rgb_array")  # verl-agent's environment, step for step; a 15-action horizon
observation, info = env.reset(row)  # the stored board itself, never regenerated from the seed
frames = [observation]  # (96, 96, 3) uint8, the image the model sees
for action in from_lurd(row.shortest_solution):  # stored for audit; an agent never sees it
    observation, reward, done, info = env.step(action)
    frames.append(observation)
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "validation-board.gif"
save_gif(out, frames, duration_ms=400)
print(f"{row.task_id}: won={info['won']} in {env.num_env_steps} actions; wrote {out}")
