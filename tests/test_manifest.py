"""Run manifests: filled from verl-agent's real composed config, validated strictly, and checked by
compare before the numbers (settings, schedules, costs apart from success)."""

import json
import re
import shlex
from functools import lru_cache

import numpy as np
import pytest

from conftest import REPO
from sokoban_tools.evaluation import compare
from sokoban_tools.records.episodes import EpisodeRecord
from sokoban_tools.records.manifest import (ENVIRONMENT, SETTINGS, VERL_AGENT_UNIT, ManifestError, add_costs,
                                               costs_from_verl_metrics, environment_settings,
                                               manifest_from_verl_config, manifest_path, new_manifest,
                                               read_manifest, write_manifest)
from test_score_compare import pattern, records, write
from unavailable import unavailable

VERL_AGENT = REPO.parent / "shared" / "verl-agent"
CONFIG_DIR = VERL_AGENT / "verl" / "trainer" / "config"
LAUNCHER = VERL_AGENT / "examples" / "grpo_trainer" / "run_sokoban.sh"


def launcher_overrides() -> list[str]:
    """run_sokoban.sh's overrides of main_ppo, its shell variables substituted as it runs by default."""
    text = LAUNCHER.read_text()
    variables = {**dict(re.findall(r"^(\w+)=(\S+)", text, re.M)), "ENGINE": "vllm"}  # ENGINE=${1:-vllm}
    command = text.split("python3 -m verl.trainer.main_ppo", 1)[1].replace("\\\n", " ")
    return [re.sub(r"\$(\w+)", lambda m: variables.get(m.group(1), m.group(0)), word)
            for word in shlex.split(command, comments=True) if word != "$@"]


@lru_cache(maxsize=None)  # composing takes a second; the tests only read the result
def composed(*extra: str):
    """verl-agent's ppo_trainer.yaml composed with Hydra and the launcher's overrides, then ``extra``."""
    if not LAUNCHER.exists():
        unavailable(f"verl-agent's files are missing ({VERL_AGENT})")
    try:
        from hydra import compose, initialize_config_dir
    except ImportError:
        unavailable("hydra-core is not installed (pip install -e '.[test]')")
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="ppo_trainer", overrides=launcher_overrides() + list(extra))


def test_a_manifest_from_the_launchers_config_holds_every_setting_with_the_configs_values():
    from omegaconf import OmegaConf

    config = composed()
    settings = manifest_from_verl_config(config)["settings"]
    assert list(settings) == [setting.key for setting in SETTINGS]
    for setting in SETTINGS:
        expected = (environment_settings()[setting.key] if setting.verl_agent == ENVIRONMENT
                    else "updates" if setting.verl_agent == VERL_AGENT_UNIT  # verl-agent counts its budget in updates
                    else OmegaConf.select(config, setting.verl_agent))
        assert settings[setting.key] == expected and type(settings[setting.key]) in (type(expected), float)
    # the launcher's own figures, as run_sokoban.sh states them
    assert settings["initial_weights.model"] == "Qwen/Qwen2.5-VL-3B-Instruct"
    assert settings["action_horizon"] == 15 and settings["rollout.group_size"] == 8
    assert settings["evaluation.before_training"] is True and settings["evaluation.frequency"] == 5
    assert settings["decoding.validation.temperature"] == 0.4 and settings["decoding.training.temperature"] == 1.0
    assert settings["reward.invalid_action_penalty"] is True and settings["reward.invalid_action_penalty_coef"] == 0.1
    assert settings["update_budget.total_epochs"] == 150 and settings["update_budget.groups_per_update"] == 32
    assert settings["decoding.validation.response_length"] == settings["decoding.training.response_length"] == 512
    assert settings["initial_weights.revision"] is None and settings["image_processing.observation"] == "rgb_array"
    plain = manifest_from_verl_config(OmegaConf.to_container(config, resolve=True))
    assert plain == manifest_from_verl_config(config) and plain["method"] == "grpo"


@pytest.mark.parametrize("override, key, value", [
    ("env.max_steps=30", "action_horizon", 30),
    ("actor_rollout_ref.rollout.val_kwargs.temperature=0.7", "decoding.validation.temperature", 0.7),
    ("actor_rollout_ref.rollout.temperature=0.9", "decoding.training.temperature", 0.9),
    ("env.rollout.n=4", "rollout.group_size", 4),
    ("actor_rollout_ref.model.path=Qwen/Qwen2.5-VL-7B-Instruct", "initial_weights.model", "Qwen/Qwen2.5-VL-7B-Instruct"),
    ("+actor_rollout_ref.model.revision=66285546d2b821cf421d4f5eb2576359d3770cd3", "initial_weights.revision",
     "66285546d2b821cf421d4f5eb2576359d3770cd3"),
    ("actor_rollout_ref.actor.invalid_action_penalty_coef=0.5", "reward.invalid_action_penalty_coef", 0.5),
    ("actor_rollout_ref.actor.use_invalid_action_penalty=False", "reward.invalid_action_penalty", False),
    ("trainer.test_freq=10", "evaluation.frequency", 10),
    ("trainer.val_before_train=False", "evaluation.before_training", False),
    ("trainer.total_training_steps=100", "update_budget.total_training_steps", 100),
    ("data.max_response_length=1024", "decoding.training.response_length", 1024),
])
def test_changing_one_override_changes_exactly_that_entry(override, key, value):
    base = manifest_from_verl_config(composed())["settings"]
    changed = manifest_from_verl_config(composed(override))["settings"]
    differing = {k for k in base if base[k] != changed[k]}
    # one response length serves training and validation in verl: that override moves both
    assert differing == ({key, "decoding.validation.response_length"} if "response_length" in key else {key})
    assert changed[key] == value


def test_a_config_missing_a_setting_is_refused_naming_its_key():
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(composed(), resolve=True)
    del config["env"]["max_steps"]
    with pytest.raises(ManifestError, match=r"the verl-agent config has no env\.max_steps"):
        manifest_from_verl_config(config)
    config = OmegaConf.to_container(composed(), resolve=True)
    config["actor_rollout_ref"]["rollout"]["val_kwargs"]["temperature"] = "warm"
    with pytest.raises(ManifestError, match=r"settings\.decoding\.validation\.temperature must be a number"):
        manifest_from_verl_config(config)


def example_settings(**changes) -> dict:
    settings = {setting.key: None for setting in SETTINGS}
    settings.update({"action_horizon": 15, "evaluation.before_training": True, "evaluation.frequency": 5,
                     "initial_weights.model": "Qwen/Qwen2.5-VL-3B-Instruct", "decoding.validation.temperature": 0.4,
                     "update_budget.unit": "updates"}, **environment_settings())
    settings.update(changes)
    return settings


def bad_manifests():
    """(name, change to a good manifest, the key the message must name)."""
    def setting(key, value):
        return lambda m: m["settings"].__setitem__(key, value)
    return [
        ("wrong type", setting("action_horizon", "15"), r"settings\.action_horizon must be an integer"),
        ("bool as integer", setting("rollout.group_size", True), r"settings\.rollout\.group_size must be an integer"),
        ("nan", setting("reward.step", float("nan")), r"settings\.reward\.step must be a finite number"),
        ("unit", setting("update_budget.unit", "steps"), r'settings\.update_budget\.unit must be "updates" or "env '
                                                         r'steps", got "steps"'),
        ("null unit", setting("update_budget.unit", None), r'settings\.update_budget\.unit must be "updates" or '
                                                            r'"env steps", got null'),
        ("unknown setting", setting("decoding.training.beam", 4), r"settings: unknown key 'decoding\.training\.beam'"),
        ("missing setting", lambda m: m["settings"].pop("action_horizon"), r"settings: missing key 'action_horizon'"),
        ("unknown key", lambda m: m.__setitem__("comment", "x"), r"unknown key 'comment' \(free-form text goes under 'notes'\)"),
        ("train digest", lambda m: m["data_sha256"].__setitem__("fairness/train.jsonl", "0" * 64),
         r"data_sha256\.fairness/train\.jsonl is '0{64}', not the published"),
        ("evaluation digest", lambda m: m["data_sha256"].pop("fairness/evaluation.jsonl"),
         r"data_sha256\.fairness/evaluation\.jsonl is None, not the published"),
        ("release", lambda m: m.__setitem__("release", 1), r"release must be a non-empty string, got 1"),
        ("evaluation digest null", lambda m: m["data_sha256"].__setitem__("fairness/evaluation.jsonl", None),
         r"data_sha256\.fairness/evaluation\.jsonl is None, not the published"),
        ("cost unit", lambda m: m["costs"].__setitem__("gen", {"unit": "", "value": 3}), r"costs\.gen\.unit must name"),
        ("cost value", lambda m: m["costs"].__setitem__("gen", {"unit": "GPU-seconds", "value": -1}),
         r"costs\.gen\.value must be a finite number >= 0"),
    ]


@pytest.mark.parametrize("case", range(len(bad_manifests())))
def test_a_bad_hand_written_manifest_is_refused_naming_file_and_key(tmp_path, case):
    name, damage, message = bad_manifests()[case]
    manifest = new_manifest("GRPO", example_settings(), notes={"free": ["form", 1]})
    damage(manifest)
    path = tmp_path / "run.jsonl.manifest.json"
    path.write_text(json.dumps(dict(reversed(manifest.items()))))  # any key order
    with pytest.raises(ManifestError, match=rf"{re.escape(str(path))}: {message}"):
        read_manifest(path)


def test_a_good_hand_written_manifest_is_read_in_any_key_order_with_free_notes(tmp_path):
    manifest = new_manifest("GRPO", example_settings(), notes="trained on 2 GPUs, teacher cached")
    path = tmp_path / "run.jsonl.manifest.json"
    path.write_text(json.dumps({**dict(reversed(manifest.items())), "settings": dict(reversed(manifest["settings"].items()))}))
    assert read_manifest(path) == manifest
    scripted = new_manifest("random", example_settings(), trained=False)  # trained on no boards
    path.write_text(json.dumps(scripted))
    assert read_manifest(path)["data_sha256"] == {"fairness/train.jsonl": None,
                                                  "fairness/evaluation.jsonl": manifest["data_sha256"]["fairness/evaluation.jsonl"]}
    path.write_text(json.dumps(manifest).replace('"method": "GRPO"', '"method": "GRPO", "method": "PPO"'))
    with pytest.raises(ManifestError, match="duplicate key"):
        read_manifest(path)


def test_a_manifest_is_written_once_per_run_beside_its_log(tmp_path):
    log = tmp_path / "episodes.jsonl"
    manifest = new_manifest("GRPO", example_settings())
    assert write_manifest(log, manifest) == manifest_path(log) == tmp_path / "episodes.jsonl.manifest.json"
    add_costs(log, {"gen": ("GPU-seconds", 5.0)})
    assert write_manifest(log, manifest) == manifest_path(log)  # the same run again: kept, costs too
    assert read_manifest(manifest_path(log))["costs"] == {"gen": {"unit": "GPU-seconds", "value": 5.0}}
    log.write_text(EpisodeRecord("GRPO", "seed-1", "training", 1, "train-00000", False, 15, -1.5, None).to_line() + "\n")
    with pytest.raises(ManifestError, match=r"another settings \(action_horizon\).*its own episode log"):
        write_manifest(log, new_manifest("GRPO", example_settings(action_horizon=30)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.jsonl", "episodes.jsonl.manifest.json"]


def test_another_runs_manifest_beside_no_record_is_replaced_so_the_corrected_run_starts(tmp_path):
    """A run that stopped before its first record (a wrong option) leaves a manifest that describes
    nothing: the corrected run's replaces it, where one beside records would be refused."""
    log = tmp_path / "episodes.jsonl"
    write_manifest(log, new_manifest("GRPO", example_settings(action_horizon=30)))
    corrected = new_manifest("GRPO", example_settings())
    write_manifest(log, corrected)
    assert read_manifest(manifest_path(log)) == corrected
    manifest_path(log).write_text("{torn")
    write_manifest(log, corrected)
    assert read_manifest(manifest_path(log)) == corrected


def test_the_trainers_timing_metrics_become_cost_entries_that_add_up(tmp_path):
    log = tmp_path / "episodes.jsonl"
    write_manifest(log, new_manifest("CPAD", example_settings()))
    step = {"timing_s/gen": 12.5, "timing_s/update_actor": 4.0, "timing_s/teacher_scoring": 3.0,
            "perf/total_num_tokens": 1000, "critic/score/mean": 0.3, "timing_per_token_ms/gen": 0.1}
    entries = costs_from_verl_metrics(step, gpus=2)
    assert entries == {"gen": ("GPU-seconds", 25.0), "update_actor": ("GPU-seconds", 8.0),
                       "teacher_scoring": ("GPU-seconds", 6.0), "tokens": ("tokens", 1000.0)}
    add_costs(log, entries)
    costs = add_costs(log, entries)["costs"]
    assert costs["gen"] == {"unit": "GPU-seconds", "value": 50.0} and costs["tokens"]["value"] == 2000.0
    with pytest.raises(ManifestError, match=r"costs\.gen is in GPU-seconds, not tokens"):
        add_costs(log, {"gen": ("tokens", 1.0)})
    with pytest.raises(ValueError, match="gpus must be a positive integer"):
        costs_from_verl_metrics(step, gpus=0)


# --- compare: the settings before the numbers ---------------------------------------------------

def run_log(tmp_path, name, method, settings, costs=None, updates=(0, 5), wins=60):
    log = write(tmp_path / f"{name}.jsonl", *[records(method, "s1", u, pattern(wins + 10 * u)) for u in updates])
    write_manifest(log, new_manifest(method, settings))
    if costs:
        add_costs(log, costs)
    return log


def test_compare_accepts_runs_whose_only_difference_is_the_method(tmp_path, capsys):
    a = run_log(tmp_path, "a", "CPAD", example_settings())
    b = run_log(tmp_path, "b", "GRPO", example_settings(), wins=40)
    assert compare.main(["--a", str(a), "--b", str(b)]) == 0
    out = capsys.readouterr().out
    assert f"Settings: the {len(SETTINGS)} controlled settings of the run manifests" in out
    assert "only the method differs" in out and "Caveat" not in out


@pytest.mark.parametrize("key, a_value, b_value", [
    ("action_horizon", 15, 30),
    ("decoding.validation.temperature", 0.4, 1.0),
    ("rollout.group_size", 8, 16),
    ("initial_weights.model", "Qwen/Qwen2.5-VL-3B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct"),
    ("reward.invalid_action_penalty_coef", 0.1, None),
    ("evaluation.frequency", 5, 10),
])
def test_compare_refuses_each_single_setting_difference_unless_allowed(tmp_path, capsys, key, a_value, b_value):
    a = run_log(tmp_path, "a", "CPAD", example_settings(**{key: a_value}))
    b = run_log(tmp_path, "b", "GRPO", example_settings(**{key: b_value}))
    assert compare.main(["--a", str(a), "--b", str(b)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert f"controlled setting {key} differs: A {json.dumps(a_value)}, B {json.dumps(b_value)}" in err
    assert "--allow-difference KEY" in err and err.count("differs:") == 1
    assert compare.main(["--a", str(a), "--b", str(b), "--allow-difference", key]) == 0
    out = capsys.readouterr().out
    assert f"Caveat: {key} differs (A {json.dumps(a_value)}, B {json.dumps(b_value)}), allowed by --allow-difference" in out


def test_compare_lists_every_difference_and_refuses_an_unknown_allowed_key(tmp_path, capsys):
    a = run_log(tmp_path, "a", "CPAD", example_settings())
    b = run_log(tmp_path, "b", "GRPO", example_settings(action_horizon=30, **{"decoding.validation.temperature": 1.0}))
    assert compare.main(["--a", str(a), "--b", str(b), "--allow-difference", "action_horizon"]) == 1
    err = capsys.readouterr().err
    assert "decoding.validation.temperature differs" in err and "action_horizon differs" not in err
    with pytest.raises(SystemExit):
        compare.main(["--a", str(a), "--b", str(b), "--allow-difference", "horizon"])
    assert "--allow-difference horizon: not a controlled setting" in capsys.readouterr().err


def test_compare_needs_manifests_or_says_it_did_not_check(tmp_path, capsys):
    a = run_log(tmp_path, "a", "CPAD", example_settings())
    bare = write(tmp_path / "bare.jsonl", *[records("GRPO", "s1", u, pattern(40)) for u in (0, 5)])
    assert compare.main(["--a", str(a), "--b", str(bare)]) == 1
    err = capsys.readouterr().err
    assert "bare.jsonl: has no run manifest beside it (bare.jsonl.manifest.json)" in err and "--no-manifest" in err
    assert compare.main(["--a", str(a), "--b", str(bare), "--no-manifest", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["settings"] == {"checked": False} and report["costs"] is None
    manifest_path(bare).write_text("{}")
    assert compare.main(["--a", str(a), "--b", str(bare)]) == 1
    assert "bare.jsonl.manifest.json: missing key 'format'" in capsys.readouterr().err


def test_compare_refuses_updates_not_on_both_schedules_naming_them(tmp_path, capsys):
    a = run_log(tmp_path, "a", "CPAD", example_settings(), updates=(0, 5, 10))
    b = run_log(tmp_path, "b", "GRPO", example_settings(), updates=(0, 5, 7))
    assert compare.main(["--a", str(a), "--b", str(b)]) == 1
    err = capsys.readouterr().err
    assert "only A validated at update(s) 10; only B validated at update(s) 7: not on both runs' schedules" in err
    assert compare.main(["--a", str(a), "--b", str(b), "--updates", "0", "10"]) == 1
    assert "only A validated at update(s) 10" in capsys.readouterr().err
    assert compare.main(["--a", str(a), "--b", str(b), "--updates", "0", "5", "--json"]) == 0
    assert [u["update"] for u in json.loads(capsys.readouterr().out)["updates"]] == [0, 5]


def test_cost_entries_are_shown_per_method_and_entry_and_never_change_success(tmp_path, capsys):
    settings = example_settings()
    a = run_log(tmp_path, "a", "CPAD", settings, costs={"gen": ("GPU-seconds", 100.0),
                                                          "teacher_scoring": ("GPU-seconds", 40.0)})
    b = run_log(tmp_path, "b", "GRPO", settings, costs={"gen": ("GPU-seconds", 90.0), "tokens": ("tokens", 5e6)})
    assert compare.main(["--a", str(a), "--b", str(b), "--json"]) == 0
    with_costs = json.loads(capsys.readouterr().out)
    assert with_costs["costs"] == {
        "a": {"gen": {"unit": "GPU-seconds", "total": 100.0, "per_run": 100.0},
              "teacher_scoring": {"unit": "GPU-seconds", "total": 40.0, "per_run": 40.0}},
        "b": {"gen": {"unit": "GPU-seconds", "total": 90.0, "per_run": 90.0},
              "tokens": {"unit": "tokens", "total": 5e6, "per_run": 5e6}}}
    for log in (a, b):  # the same runs without any cost: every figure of success is the same
        manifest = read_manifest(manifest_path(log))
        manifest_path(log).write_text(json.dumps({**manifest, "costs": {}}))
    assert compare.main(["--a", str(a), "--b", str(b), "--json"]) == 0
    without = json.loads(capsys.readouterr().out)
    assert without["updates"] == with_costs["updates"] and without["costs"] == {"a": {}, "b": {}}
    add_costs(a, {"gen": ("GPU-seconds", 1e9)})
    assert compare.main(["--a", str(a), "--b", str(b)]) == 0
    text = capsys.readouterr().out
    assert re.search(r"gen +GPU-seconds +1,000,000,000 \(1,000,000,000 a run\) +—", text)
    assert np.isclose(without["updates"][1]["success_a"], (60 + 50) / 256)


@pytest.mark.parametrize("spelling", [["decoding.validation.temperature", "action_horizon"],
                                      ["decoding.validation.temperature,action_horizon"]])
def test_compare_takes_several_allowed_differences_in_one_option_and_names_them_ready_to_paste(tmp_path, capsys,
                                                                                              spelling):
    a = run_log(tmp_path, "a", "CPAD", example_settings())
    b = run_log(tmp_path, "b", "GRPO", example_settings(action_horizon=30, **{"decoding.validation.temperature": 1.0}))
    assert compare.main(["--a", str(a), "--b", str(b)]) == 1
    err = capsys.readouterr().err
    # the refusal gives the one option that accepts both, in the order the differences are listed
    ready = err.split("(here: ")[1].split(")")[0]
    assert sorted(ready.split()[1:]) == ["action_horizon", "decoding.validation.temperature"]
    assert compare.main(["--a", str(a), "--b", str(b), *ready.split()]) == 0
    capsys.readouterr()
    assert compare.main(["--a", str(a), "--b", str(b), "--allow-difference", *spelling]) == 0
    out = capsys.readouterr().out
    assert "Caveat: action_horizon differs" in out and "Caveat: decoding.validation.temperature differs" in out


# --- the budget's unit: a setting of its own, older manifests read with it ------------------------

def without_unit(manifest: dict) -> dict:
    """``manifest`` as it was written before ``update_budget.unit`` existed."""
    return {**manifest, "settings": {k: v for k, v in manifest["settings"].items() if k != "update_budget.unit"}}


def env_step_manifest(**changes) -> dict:
    from sokoban_tools.records.budget import StepSchedule

    schedule = StepSchedule(total=200_000, every=20_000)
    return new_manifest("PPO", example_settings(**schedule.settings(), **changes), notes={"schedule": schedule.note()})


def test_a_step_schedule_states_env_steps_and_verl_agent_updates():
    from sokoban_tools.records.budget import StepSchedule

    assert StepSchedule(total=100, every=10).settings()["update_budget.unit"] == "env steps"
    assert env_step_manifest()["settings"]["update_budget.unit"] == "env steps"
    assert manifest_from_verl_config(composed())["settings"]["update_budget.unit"] == "updates"


@pytest.mark.parametrize("committed, unit", [("examples/training/ppo-0.jsonl.manifest.json", "env steps"),
                                             ("examples/training/grpo-0.jsonl.manifest.json", "env steps"),
                                             ("results/smollm2-135m-text/episodes.jsonl.manifest.json", "updates")])
def test_a_committed_manifest_without_the_unit_reads_with_the_unit_its_notes_imply(committed, unit):
    """The committed manifests predate the field and stay as written: the reader fills it, env steps
    where the notes' schedule says so (a learner counting env steps), else updates (verl-agent's)."""
    path = REPO / committed
    data = path.read_bytes()
    assert "update_budget.unit" not in json.loads(data)["settings"]
    settings = read_manifest(path)["settings"]
    assert settings["update_budget.unit"] == unit and list(settings) == [setting.key for setting in SETTINGS]
    assert path.read_bytes() == data


@pytest.mark.parametrize("manifest", [env_step_manifest, lambda: new_manifest("GRPO", example_settings())],
                         ids=["env steps", "updates"])
def test_an_older_manifest_and_a_new_one_of_the_same_run_are_one_run(tmp_path, manifest):
    """An older manifest beside a log holding records is kept (not rewritten) for the same run's new one."""
    new = manifest()
    log = write(tmp_path / "run.jsonl", records(new["method"], "s1", 0, pattern(60)))
    manifest_path(log).write_text(json.dumps(without_unit(new)))
    older = manifest_path(log).read_bytes()
    assert read_manifest(manifest_path(log)) == new
    assert write_manifest(log, new) == manifest_path(log) and manifest_path(log).read_bytes() == older
    with pytest.raises(ManifestError, match=r"another settings \(update_budget\.unit\)"):
        other = "updates" if new["settings"]["update_budget.unit"] == "env steps" else "env steps"
        write_manifest(log, {**new, "settings": {**new["settings"], "update_budget.unit": other}})


def test_compare_treats_an_older_manifest_and_a_new_one_as_the_same_settings(tmp_path, capsys):
    a = run_log(tmp_path, "a", "CPAD", example_settings())
    b = run_log(tmp_path, "b", "GRPO", example_settings(), wins=40)
    manifest_path(b).write_text(json.dumps(without_unit(read_manifest(manifest_path(b)))))
    assert compare.main(["--a", str(a), "--b", str(b)]) == 0
    assert "only the method differs" in capsys.readouterr().out


def test_compare_refuses_runs_of_different_units_unless_the_passes_are_chosen(tmp_path, capsys):
    a = run_log(tmp_path, "a", "CPAD", example_settings())
    b = run_log(tmp_path, "b", "GRPO", example_settings(**{"update_budget.unit": "env steps"}))
    assert compare.main(["--a", str(a), "--b", str(b)]) == 1
    assert 'controlled setting update_budget.unit differs: A "updates", B "env steps"' in capsys.readouterr().err
    assert compare.main(["--a", str(a), "--b", str(b), "--update-a", "5", "--update-b", "5"]) == 0
    assert "update_budget.unit differs" in capsys.readouterr().out  # said, as a schedule the user chose past
