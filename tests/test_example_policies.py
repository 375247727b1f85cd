"""The worked example, at small size: real episodes through the runtime environment, logged in the
schema, scored and compared by the commands."""

import pytest

from sokoban_tools.evaluation import compare, score
from sokoban_tools.evaluation.replay import verify_log
from sokoban_tools.pipeline import example_policies
from sokoban_tools.protocol import BOX_ON_TARGET_REWARD, DEFAULT_MAX_STEPS, STEP_PENALTY, WIN_REWARD
from sokoban_tools.records.episodes import read_episodes
from sokoban_tools.records.tasks import load_validation


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    out = tmp_path_factory.mktemp("episodes")
    for path, data in example_policies.build(out, runs=1, updates=(0, 10)).items():
        path.write_bytes(data)
    return out


def test_example__logs_one_complete_pass_per_method_run_and_update(logs):
    report = score.score([logs / "random.jsonl", logs / "path-follower.jsonl"])
    keys = [(g["method"], g["run"], g["update"], g["boards"]) for g in report["groups"]]
    assert keys == [(m, "seed-0", u, 256) for m in ("path-follower", "random") for u in (0, 10)]


def test_example__every_logged_episode_is_consistent_with_the_environment_rules(logs):
    for method in example_policies.METHODS:
        for record in read_episodes(logs / f"{method}.jsonl"):
            assert 1 <= record.actions <= DEFAULT_MAX_STEPS
            assert record.won or record.actions == DEFAULT_MAX_STEPS
            expected = record.actions * STEP_PENALTY + record.won * (BOX_ON_TARGET_REWARD + WIN_REWARD)
            assert record.episode_return == pytest.approx(expected)
        assert verify_log(logs / f"{method}.jsonl").as_dict() == {"verified": 512, "unverified": 0,
                                                                   "returns_unchecked": []}


def test_example__the_path_follower_improves_on_random_only_once_it_follows(logs):
    report = compare.compare([logs / "path-follower.jsonl"], [logs / "random.jsonl"], resamples=200)
    start, later = report["updates"]
    assert start["ci95"][0] < 0 < start["ci95"][1]  # p = 0 at update 0: both play at random
    assert later["difference"] > 0.3 and later["p_value"] < 1e-6


def test_example__a_pass_is_the_same_when_played_again():
    boards = load_validation()[:20]
    first = example_policies.play_pass("path-follower", 2, 5, boards, "ab" * 32)
    assert first == example_policies.play_pass("path-follower", 2, 5, boards, "ab" * 32)
    assert first != example_policies.play_pass("path-follower", 3, 5, boards, "ab" * 32)


def test_example__each_log_has_a_manifest_whose_settings_match_and_whose_costs_count_the_work(logs):
    from sokoban_tools.records.manifest import manifest_path, read_manifest

    report = compare.compare([logs / "path-follower.jsonl"], [logs / "random.jsonl"], resamples=200)
    assert report["settings"]["checked"] and report["settings"]["allowed_differences"] == []
    manifest = read_manifest(manifest_path(logs / "random.jsonl"))
    assert manifest["settings"]["action_horizon"] == DEFAULT_MAX_STEPS
    assert manifest["settings"]["evaluation.frequency"] == 10 and manifest["settings"]["evaluation.before_training"]
    steps = sum(record.actions for record in read_episodes(logs / "random.jsonl"))
    assert report["costs"]["b"] == {"environment_steps": {"unit": "environment steps", "total": steps, "per_run": steps}}
    assert report["costs"]["a"]["shortest_path_searches"]["total"] > 0
