"""A long fair run's driver does not grow: no record is kept once written, costs are not re-read.

``verl_agent_fit.py`` plays 2,000 updates of the patched ``fit`` loop's mirror (local
backend, two training environments and a model that plays the stored solutions to keep the
test cheap, a validation pass of the 256 boards every 250 updates, checkpoints every 1,000) and reads the trainer process's RSS
after updates 100, 1,000 and 2,000. The runtime's bounded caches (rendered positions,
empty rooms, room layouts: LRU caches of fixed size, and at most one layout per stored
room) fill during the first updates at this small scale, so the growth that would show
a leak is measured where they are warm, from update 1,000 to 2,000; the test also keeps
the whole run's growth under the caches' bound. And it counts the episode records alive
in the process: none, after 100 updates as after 2,000 (a kept record is the growth that
matters, about 0.4 kB each, 256 per validation pass).
"""

from __future__ import annotations

import pytest

from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.manifest import manifest_path, read_manifest
from test_verl_agent_patched_trainer import patched_copy, require
from test_verl_agent_resume import drive

pytestmark = pytest.mark.slow  # it runs the patched verl-agent, as the other such tests are marked

UPDATES = 2000
MB = 1024  # RSS is in kB
CACHES_MB = 64  # the runtime's render caches (2 x 1,024 images of 27 kB) and room layouts


def test_rss_after_2000_updates_is_that_after_1000_and_the_log_and_costs_are_complete(tmp_path):
    require("torch", "omegaconf", "hydra")
    tree = patched_copy(tmp_path / "verl-agent")
    overrides = ["data.train_batch_size=2", "env.rollout.n=1", "data.val_batch_size=128",
                 f"trainer.total_training_steps={UPDATES}", "trainer.test_freq=250", "trainer.save_freq=1000"]
    [run] = drive(tree, tmp_path / "work", [{"folder": "long", "overrides": overrides, "model": "solution",
                                             "memory_at": [100, 1000, UPDATES]}])
    assert run["exit"] == 0, run["error"]
    rss = {int(update): kb for update, kb in run["rss_kb"].items()}
    print(f"\nRSS (MB) after updates 100 / 1000 / {UPDATES}: "
          f"{rss[100] / MB:.1f} / {rss[1000] / MB:.1f} / {rss[UPDATES] / MB:.1f}")
    assert rss[UPDATES] - rss[1000] < 3 * MB, rss  # warm: a thousand more updates add nothing
    assert rss[UPDATES] - rss[100] < CACHES_MB * MB, rss
    # no record outlives its write: none alive between steps, after 100 updates as after 2,000
    assert run["records_alive"] == {"100": 0, "1000": 0, str(UPDATES): 0}
    log = tmp_path / "work" / "long" / "checkpoints" / "episodes.jsonl"
    records = read_episodes(log)
    assert sum(r.phase == "training" for r in records) == 2 * UPDATES  # every episode, the last step's too
    assert sum(r.phase == "validation" for r in records) == 256 * (1 + UPDATES // 250)
    costs = read_manifest(manifest_path(log))["costs"]
    assert costs["gen"] == {"unit": "GPU-seconds", "value": 1.0 * UPDATES}  # each step's, added once
