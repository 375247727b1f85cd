"""compare on training runs: seeds counted, passes paired by env steps or refused, a short run
set beside a committed one, and the chart's axis in the runs' own unit."""

import json
from pathlib import Path

import pytest

from sokoban_tools.evaluation import compare
from sokoban_tools.evaluation.stats import smallest_p
from sokoban_tools.layout import TRAINING_SEEDS

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "examples" / "training"
OWN = ["--allow-difference", "decoding.training.n", "rollout.group_size", "update_budget.groups_per_update"]


def logs(method: str) -> list[str]:
    return [str(RUNS / f"{method}-{seed}.jsonl") for seed in TRAINING_SEEDS]


def committed_manifest(method: str, seed: int = 0) -> dict:
    return json.loads((RUNS / f"{method}-{seed}.jsonl.manifest.json").read_text())


def trained(method: str, seed: int) -> int:
    """The env steps a committed run trained, from its manifest's costs."""
    return committed_manifest(method, seed)["costs"]["training_env_steps"]["value"]


def budget(method: str) -> int:
    """The committed runs' budget of ``method`` (every seed's is the same: tests/test_train.py)."""
    return committed_manifest(method)["settings"]["update_budget.total_training_steps"]


def pass_every(method: str) -> int:
    return committed_manifest(method)["settings"]["evaluation.frequency"]


def report(capsys, *args: str) -> dict:
    assert compare.main([*args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_compare__gigpo_against_grpo_counts_seeds_paired_by_seed(capsys):
    args = ["--a", *logs("gigpo"), "--b", *logs("grpo"), "--updates", str(budget("gigpo"))]
    first = report(capsys, *args)
    (last,) = first["updates"]
    seeds = last["seeds"]
    # The runs of one seed share their initial weights (they play alike before training): paired.
    assert seeds["paired_by_seed"] and last["intervals"]["p_value"] == "permutation"
    assert last["p_value"] == seeds["permutation"]["p_value"] >= seeds["permutation"]["smallest_p"]
    assert seeds["permutation"]["smallest_p"] == smallest_p(len(TRAINING_SEEDS), len(TRAINING_SEEDS), True)
    assert last["ci95"][0] <= last["difference"] <= last["ci95"][1]
    assert 0 <= last["probability_of_improvement"] <= 1 and len(last["runs_a"]) == len(TRAINING_SEEDS)
    assert {"iqm_a", "iqm_a_ci95", "iqm_b", "iqm_b_ci95", "probability_of_improvement_ci95"} <= set(last)
    assert [entry["p_value_holm"] >= entry["p_value"] for entry in last["by_stratum"].values()] == [True] * 3
    assert report(capsys, *args) == first  # every resampling seeded: the same report again


def test_compare__a_short_run_beside_the_committed_ones(tmp_path, capsys):
    short = tmp_path / "short.jsonl"
    rows = [json.loads(line) for line in (RUNS / "grpo-0.jsonl").read_text().splitlines()]
    relabel = {0: 0, pass_every("grpo"): 10000, 2 * pass_every("grpo"): 20000}
    short.write_text("".join(json.dumps({**row, "update": relabel[row["update"]]}) + "\n"
                             for row in rows if row["update"] in relabel))
    manifest = json.loads((RUNS / "grpo-0.jsonl.manifest.json").read_text())
    manifest["settings"].update({"update_budget.total_training_steps": 20000, "evaluation.frequency": 10000})
    manifest["costs"]["training_env_steps"]["value"] = 21317
    (tmp_path / "short.jsonl.manifest.json").write_text(json.dumps(manifest))
    assert compare.main(["--a", str(short), "--b", *logs("ppo"), *OWN]) == 1
    err = capsys.readouterr().err
    assert "update_budget.total_training_steps differs" in err  # the schedules differ: refused as any setting
    assert compare.main(["--a", str(short), "--b", *logs("ppo"), *OWN, "--allow-difference",
                         "update_budget.total_training_steps", "evaluation.frequency"]) == 1
    err = capsys.readouterr().err
    assert "set one pass of each against the other with --update-a A_PASS --update-b B_PASS" in err
    assert f"A's passes: 0, 10,000, 20,000; B's: 0, {pass_every('ppo'):,}," in err and "(none)" not in err
    chosen = report(capsys, "--a", str(short), "--b", *logs("ppo"), *OWN, "--update-a", "20000",
                    "--update-b", str(budget("ppo")))
    (entry,) = chosen["updates"]
    assert (entry["update_a"], entry["update_b"], entry["paired_by"]) == (20000, budget("ppo"), "chosen passes")
    steps = {trained("ppo", seed) for seed in TRAINING_SEEDS}  # every PPO run trains whole rollouts alike
    assert entry["steps_a"] == {"low": 21317, "high": 21317} and entry["steps_b"] == {"low": min(steps),
                                                                                      "high": max(steps)}
    assert {d["key"]: d["allowed_by"] for d in chosen["settings"]["allowed_differences"]}[
        "update_budget.total_training_steps"] == "--update-a/--update-b"
    assert compare.main(["--a", str(short), "--b", *logs("ppo"), *OWN, "--update-a", "20000", "--update-b",
                         str(budget("ppo"))]) == 0
    text = capsys.readouterr().out
    assert f"A 20,000 / B {budget('ppo'):,}: A's pass at 21,317 env steps, B's at {trained('ppo', 0):,}: passes chosen" in text
    assert "allowed by --update-a/--update-b" in text
    assert compare.main(["--a", str(short), "--b", *logs("ppo"), *OWN, "--update-a", "30000", "--update-b", "0"]) == 1
    assert "--update-a 30000: A has no pass there; its passes are at 0, 10,000, 20,000" in capsys.readouterr().err


def relabelled(tmp_path, method: str, seed: int, every: int, trained: int) -> str:
    """A copy of a committed run with its first passes labelled as a run validating every ``every``
    env steps, ``trained`` steps at its last pass."""
    log = tmp_path / f"{method}-{seed}.jsonl"
    rows = [json.loads(line) for line in (RUNS / f"{method}-{seed}.jsonl").read_text().splitlines()]
    relabel = {0: 0, pass_every(method): every, 2 * pass_every(method): 2 * every}
    log.write_text("".join(json.dumps({**row, "update": relabel[row["update"]]}) + "\n"
                           for row in rows if row["update"] in relabel))
    manifest = json.loads((RUNS / f"{method}-{seed}.jsonl.manifest.json").read_text())
    manifest["settings"].update({"update_budget.total_training_steps": 2 * every, "evaluation.frequency": every})
    manifest["costs"]["training_env_steps"]["value"] = trained
    Path(f"{log}.manifest.json").write_text(json.dumps(manifest))
    return str(log)


def test_compare__passes_of_one_label_far_apart_in_env_steps_are_not_paired_silently(tmp_path, capsys):
    grpo = relabelled(tmp_path, "grpo", 0, 2000, 5521)
    ppo_log = relabelled(tmp_path, "ppo", 0, 2000, 4096)
    assert compare.main(["--a", ppo_log, "--b", grpo, *OWN, "--updates", "2000"]) == 1
    err = capsys.readouterr().err
    # PPO's updates are its rollouts (n_steps x n_envs), GRPO's up to its groups x group size x horizon: each played
    # its pass after 2,000 and within an update of it
    settings = committed_manifest("grpo")["settings"]
    update = settings["update_budget.groups_per_update"] * settings["rollout.group_size"] * settings["action_horizon"]
    ppo = committed_manifest("ppo")["notes"]["learner"]["hyperparameters"]
    rollout = ppo["n_steps"] * ppo["n_envs"]
    assert (f"the passes labelled 2,000 may be up to {max(rollout, update) - 1:,} env steps apart: A's pass at 2,000 "
            f"to {2000 + rollout - 1:,} env steps, B's at 2,000 to {2000 + update - 1:,}") in err and "--step-tolerance" in err
    assert compare.main(["--a", ppo_log, "--b", grpo, *OWN, "--updates", "4000"]) == 1
    assert "A's pass at 4,096 env steps, B's at 5,521" in capsys.readouterr().err
    loose = report(capsys, "--a", ppo_log, "--b", grpo, *OWN, "--updates", "0", "4000", "--step-tolerance", "0.3")
    assert [u["paired_by"] for u in loose["updates"]] == ["env steps", "env steps"]
    # The committed runs' passes at half PPO's budget and at its end are within 5% of each other.
    committed = report(capsys, "--a", *logs("ppo"), "--b", *logs("grpo"), *OWN, "update_budget.total_training_steps",
                       "evaluation.frequency", "--updates", str(budget("ppo") // 2), str(budget("ppo")))
    assert [u["paired_by"] for u in committed["updates"]] == ["env steps", "env steps"]


def test_compare_plot__says_env_steps_and_a_mean_only_over_several_runs(capsys, monkeypatch):
    drawn = {}
    monkeypatch.setattr(compare, "line_chart", lambda series, **kwargs: drawn.update(kwargs) or b"")
    several = report(capsys, "--a", *logs("gigpo"), "--b", *logs("grpo"), "--updates", "0", str(budget("gigpo")))
    compare.learning_curves(several)
    assert drawn["x_label"] == "env steps" and drawn["title"].startswith(f"mean over {len(TRAINING_SEEDS)} runs;")
    one = report(capsys, "--a", logs("gigpo")[0], "--b", logs("grpo")[0], "--updates", "0", str(budget("gigpo")))
    compare.learning_curves(one)
    assert drawn["title"].startswith("one run a side;") and "mean" not in drawn["title"]
    mixed = report(capsys, "--a", logs("gigpo")[0], "--b", *logs("grpo"), "--updates", "0", str(budget("gigpo")))
    compare.learning_curves(mixed)
    assert drawn["title"].startswith(f"A: one run; B: mean over {len(TRAINING_SEEDS)} runs;")
    examples = REPO / "examples" / "episodes"  # evaluate's runs count updates
    compare.learning_curves(compare.compare([examples / "path-follower.jsonl"], [examples / "random.jsonl"]))
    assert drawn["x_label"] == "update"


def training_row(method: str, update: int) -> str:
    return json.dumps({"method": method, "run": "0", "phase": "training", "update": update, "task_id": "train-0001",
                       "won": False, "actions": 15, "return": -1.5, "evaluation_sha256": None,
                       "moves": "U" * 15}) + "\n"


def with_training(log: str, method: str, after: dict[int, list[int]]) -> None:
    """Training episodes written after each pass of ``log``, labelled as a learner counting env steps
    labels them (its count when their rollout began)."""
    rows = Path(log).read_text().splitlines(keepends=True)
    out, seen = [], set()
    for row in rows:
        label = json.loads(row)["update"]
        if label not in seen and seen:
            out += [training_row(method, u) for u in after.get(max(seen), [])]
        seen.add(label)
        out.append(row)
    Path(log).write_text("".join(out))


def test_compare__reads_a_passes_env_steps_from_the_training_episodes_after_it(tmp_path, capsys):
    grpo = relabelled(tmp_path, "grpo", 0, 2000, 5521)
    ppo = relabelled(tmp_path, "ppo", 0, 2000, 4096)
    # GRPO's first update took 1,761 steps, its second 1,760: its pass labelled 2,000 came after 3,521
    with_training(grpo, "GRPO", {0: [0], 2000: [3521]})
    # PPO's episode begun before its pass at 2,048 ends after it, labelled with the earlier rollout's count
    with_training(ppo, "PPO", {0: [0], 2000: [0, 2048, 2048]})
    assert compare.main(["--a", ppo, "--b", grpo, *OWN, "--updates", "2000"]) == 1
    err = capsys.readouterr().err
    assert "the passes labelled 2,000 may be up to 1,473 env steps apart: A's pass at 2,048 env steps, B's at " \
           "3,521" in err
    loose = report(capsys, "--a", ppo, "--b", grpo, *OWN, "--updates", "2000", "--step-tolerance", "0.5")
    (entry,) = loose["updates"]
    assert entry["steps_a"] == {"low": 2048, "high": 2048} and entry["steps_b"] == {"low": 3521, "high": 3521}
    assert entry["largest_gap"] == 1473 and entry["paired_by"] == "env steps"
