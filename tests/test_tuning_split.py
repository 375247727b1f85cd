"""The tuning split: 256 training boards held out by a published rule, and tuning runs that never
touch the 256 validation boards.

The selection is re-derived here from fairness/train.jsonl alone with hashlib and integer
arithmetic, independently of sokoban_tools.records.stratified, so a bug there cannot hide behind itself.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys

import pytest

from conftest import DATA_DIR, REPO

SELECTION = "tuning-256.selection.json"
SALT = "sokoban-tuning-256-v1:"
STRATA = (("1-4", 1, 4), ("5-8", 5, 8), ("9-14", 9, 14))


@pytest.fixture(scope="module")
def train_lines():
    return (DATA_DIR / "train.jsonl").read_bytes().split(b"\n")[:-1]


@pytest.fixture(scope="module")
def selection():
    return json.loads((DATA_DIR / SELECTION).read_text(encoding="utf-8"))


def independent_tuning_ids(lines) -> list[str]:
    """The tuning boards by the rule in words: Hamilton quotas over the strata, then the smallest
    salted SHA-256 within each, in source order."""
    rows = [json.loads(line) for line in lines]
    members = {label: [r["task_id"] for r in rows if low <= r["shortest_solution_length"] <= high]
               for label, low, high in STRATA}
    total = len(rows)
    floors = {label: 256 * len(ids) // total for label, ids in members.items()}
    remainders = [(-(256 * len(ids) % total), i, label) for i, (label, ids) in enumerate(members.items())]
    extra = {label for _, _, label in sorted(remainders)[: 256 - sum(floors.values())]}
    chosen = set()
    for label, ids in members.items():
        ranked = sorted(ids, key=lambda task_id: (hashlib.sha256((SALT + task_id).encode()).digest(), task_id))
        chosen |= set(ranked[: floors[label] + (label in extra)])
    return [r["task_id"] for r in rows if r["task_id"] in chosen]


def test_tuning_selection__is_the_rule_recomputed_from_the_training_pool(train_lines, selection):
    ids = independent_tuning_ids(train_lines)
    assert selection["selected"]["task_ids"] == ids and len(ids) == 256
    held = b"".join(line + b"\n" for line in train_lines if json.loads(line)["task_id"] in set(ids))
    assert selection["selected"]["sha256"] == hashlib.sha256(held).hexdigest()
    assert selection["source"]["sha256"] == hashlib.sha256((DATA_DIR / "train.jsonl").read_bytes()).hexdigest()
    assert selection["selected"]["training_rows_left"] == 5000 - 256
    assert {label: e["quota"] for label, e in selection["strata"].items()} == {"1-4": 133, "5-8": 108, "9-14": 15}


def test_tuning_selection__shares_no_board_with_the_validation_set(selection):
    validation = {json.loads(line)["task_id"] for line in (DATA_DIR / "evaluation.jsonl").read_text().splitlines()}
    assert not validation & set(selection["selected"]["task_ids"])


def test_tuning_selection__check_passes_and_a_rewrite_is_byte_identical(tmp_path):
    command = [sys.executable, "-m", "sokoban_tools", "tuning"]
    checked = subprocess.run([*command, "--check"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr
    assert f"checked fairness/{SELECTION}: identical" in checked.stdout
    for name in ("train.jsonl", "source-pool-summary.json"):
        shutil.copyfile(DATA_DIR / name, tmp_path / name)
    written = subprocess.run([*command, "--data-dir", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                             timeout=300)
    assert written.returncode == 0, written.stderr
    assert (tmp_path / SELECTION).read_bytes() == (DATA_DIR / SELECTION).read_bytes()
    (tmp_path / SELECTION).write_bytes(b"{}\n")
    stale = subprocess.run([*command, "--check", "--data-dir", str(tmp_path)], cwd=REPO, capture_output=True,
                           text=True, timeout=300)
    assert stale.returncode == 1 and f"{tmp_path / SELECTION}:1: differs" in stale.stderr


def test_tuning_selection__is_a_step_of_reproduce():
    from sokoban_tools import __main__ as command_line

    assert command_line.STEPS.index("tuning") == command_line.STEPS.index("selection") + 1


# --- Tuning runs ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tuning_run(sb3, tmp_path_factory):
    """A tiny GRPO tuning run (600 env steps: a pass before training and one after its first update)."""
    from sokoban_tools.training.train import main

    log = tmp_path_factory.mktemp("tuning") / "grpo-tuning.jsonl"
    assert main(["--method", "grpo", "--seed", "0", "--log", str(log), "--steps", "600", "--eval-every", "600",
                 "--tuning", "--quiet"]) == 0
    return log


def test_tuning_run__trains_outside_the_split_validates_on_it_and_never_plays_a_validation_board(
        sb3, tuning_run, selection):
    from sokoban_tools.records.episodes import read_episodes
    from sokoban_tools.records.manifest import manifest_path, read_manifest

    tuning = selection["selected"]["task_ids"]
    validation = {json.loads(line)["task_id"] for line in (DATA_DIR / "evaluation.jsonl").read_text().splitlines()}
    records = read_episodes(tuning_run)
    training = [r for r in records if r.phase == "training"]
    passes = {}
    for record in records:
        if record.phase == "validation":
            passes.setdefault(record.update, []).append(record)
    assert training and sorted(passes) == [0, 600]
    assert not [r.task_id for r in records if r.task_id in validation]
    assert not [r.task_id for r in training if r.task_id in set(tuning)]
    for update, played in passes.items():
        assert sorted(r.task_id for r in played) == sorted(tuning), update  # every tuning board once a pass
        assert {r.evaluation_sha256 for r in played} == {selection["selected"]["sha256"]}
    manifest = read_manifest(manifest_path(tuning_run))
    assert manifest["tuning"]["protocol"] == "sokoban-tuning-256-v1"
    assert manifest["tuning"]["validation_boards_sha256"] == selection["selected"]["sha256"]


def test_tuning_run__score_compare_and_leaderboard_add_refuse_its_log(sb3, tuning_run, tmp_path):
    from sokoban_tools.evaluation.compare import compare
    from sokoban_tools.evaluation.leaderboard import add_entry
    from sokoban_tools.evaluation.score import score
    from sokoban_tools.records.manifest import ManifestError

    committed = REPO / "examples" / "training" / "ppo-0.jsonl"
    for refused in (lambda: score([tuning_run]), lambda: compare([tuning_run], [committed]),
                    lambda: add_entry(tmp_path / "results", "tuned", tuning_run, "none", "a tester",
                                      "https://example.org/method", "2026-01-01", run="0", update=600)):
        with pytest.raises(ManifestError, match="is the log of a tuning run") as refusal:
            refused()
        assert "not the 256 validation boards" in str(refusal.value)
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_tuning_run__a_log_never_mixes_a_tuning_run_with_a_validation_run(sb3, tuning_run, tmp_path):
    from sokoban_tools.training.train import main

    log = tmp_path / tuning_run.name
    for name in (tuning_run.name, tuning_run.name + ".manifest.json"):
        shutil.copyfile(tuning_run.parent / name, tmp_path / name)  # the log without its checkpoint
    assert main(["--method", "grpo", "--seed", "0", "--log", str(log), "--steps", "600", "--eval-every", "600",
                 "--quiet"]) == 1
    assert log.read_bytes() == tuning_run.read_bytes()


def test_config__a_grid_point_equal_to_the_recipe_trains_the_same_run_and_the_manifest_sources_it(sb3, tmp_path):
    from sokoban_tools.records.manifest import manifest_path, read_manifest
    from sokoban_tools.training import group_learner, tuning
    from sokoban_tools.training.train import train

    recipe = tuning.Config(group_learner.LEARNING_RATE, group_learner.EPOCHS, group_learner.MINIBATCH_ROWS)
    point = tuning.GRID.index(recipe)
    train("grpo", 0, tmp_path / "recipe.jsonl", 600, 600, quiet=True)
    train("grpo", 0, tmp_path / "point.jsonl", 600, 600, quiet=True, config=point)
    assert (tmp_path / "recipe.jsonl").read_bytes() == (tmp_path / "point.jsonl").read_bytes()
    learner = read_manifest(manifest_path(tmp_path / "point.jsonl"))["notes"]["learner"]
    assert learner["recipe"]["learning_rate"]["source"].startswith(f"tuning grid point {point} ")
    assert learner["tuning_grid_point"] == point
    other = next(i for i, config in enumerate(tuning.GRID) if config.epochs != group_learner.EPOCHS)
    train("grpo", 0, tmp_path / "other.jsonl", 600, 600, quiet=True, config=other)
    noted = read_manifest(manifest_path(tmp_path / "other.jsonl"))["notes"]["learner"]["recipe"]["epochs"]
    assert noted["value"] == tuning.GRID[other].epochs and noted["deviates"]


def test_grid__twelve_configurations_stated_in_advance_holding_every_methods_defaults():
    from sokoban_tools.training import group_learner, ppo, tuning

    assert len(tuning.GRID) == 12 == len(set(tuning.GRID)) and len(tuning.SEEDS) == 2
    assert tuning.Config(ppo.SETTINGS["learning_rate"], ppo.SETTINGS["n_epochs"], ppo.SETTINGS["batch_size"]) \
        in tuning.GRID
    assert tuning.Config(group_learner.LEARNING_RATE, group_learner.EPOCHS, group_learner.MINIBATCH_ROWS) \
        in tuning.GRID


def test_manifest__a_tuning_entry_other_than_trains_is_refused_naming_the_key(sb3, tuning_run):
    from sokoban_tools.records.manifest import ManifestError, check_manifest, manifest_path, read_manifest

    manifest = read_manifest(manifest_path(tuning_run))
    for broken in ({**manifest["tuning"], "protocol": "sokoban-eval-256-v1"},
                   {k: v for k, v in manifest["tuning"].items() if k != "validation_boards_sha256"}, "tuning"):
        with pytest.raises(ManifestError, match="tuning must be"):
            check_manifest({**manifest, "tuning": broken}, "a hand-written manifest")
