"""score and compare answer what they were given: a file that is no log is named for what it
is with the fix for its source; compare's per-stratum paired differences, its legend, its
numbers and its one-update chart; the exact floors and ceiling beside every score."""

import importlib.util
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from conftest import DATA_DIR, REPO
from sokoban_tools.evaluation import compare, score
from sokoban_tools.evaluation.stats import PairedTable, newcombe_paired_interval, sign_test_p, success_interval
from sokoban_tools.protocol import stratum_of
from test_score_compare import ROWS, pattern, records, write
from unavailable import unavailable

EXAMPLE_MANIFEST = REPO / "examples" / "episodes" / "random.jsonl.manifest.json"
SHARED_VAGEN = REPO.parent / "shared" / "vagen"
STRATA = np.array([stratum_of(row.shortest_solution_length) for row in ROWS])


def manifest_beside(log, method, costs=None):
    """The worked example's manifest, for ``method`` (and with ``costs``), beside ``log``."""
    manifest = json.loads(EXAMPLE_MANIFEST.read_text(encoding="utf-8"))
    manifest["method"] = method
    if costs is not None:
        manifest["costs"] = costs
    path = log.with_name(log.name + ".manifest.json")
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return path


def one_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("indent", [2, None])
def test_score_and_compare__name_a_run_manifest_given_as_the_log_and_the_log_to_give(tmp_path, capsys, indent):
    log = write(tmp_path / "run.jsonl", records("A", "s1", 0, pattern(10)))
    manifest = manifest_beside(log, "A")
    manifest.write_text(json.dumps(json.loads(manifest.read_text()), indent=indent) + "\n", encoding="utf-8")
    assert score.main([str(manifest)]) == 1
    err = one_error(capsys)
    assert f"{manifest}: is a run manifest (the settings of method 'A'), not an episode log" in err
    assert f"give {log}, the log it sits beside" in err
    for args in (["--a", str(manifest), "--b", str(log)], ["--a", str(log), "--b", str(manifest), "--no-manifest"]):
        assert compare.main(args) == 1
        assert "is a run manifest" in one_error(capsys)


def test_score_and_compare__name_vagens_summary_json_and_the_command_that_logs_its_dump(tmp_path, capsys):
    source = SHARED_VAGEN / "vagen" / "evaluate" / "utils" / "summary_utils.py"
    if not source.is_file():
        unavailable(f"VAGEN's files are not at {SHARED_VAGEN}")
    copy = tmp_path / "summary_utils.py"  # imported from a copy: no bytecode lands beside VAGEN's files
    shutil.copyfile(source, copy)
    spec = importlib.util.spec_from_file_location("vagen_summary_utils", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = [{"rollout_id": f"r{i}", "seed": i, "num_turns": 2, "success": i % 3 == 0, "cumulative_reward": 1.0,
                "finish_reason": "done", "rewards": [0.5, 0.5], "infos": [{}, {}, {}]} for i in range(4)]
    summary = module.write_rollouts_summary(results, dump_dir=str(tmp_path / "dump"))  # VAGEN's own writer
    assert score.main([summary]) == 1
    err = one_error(capsys)
    assert "summary.json: is VAGEN's summary.json (4 episodes)" in err
    assert "python -m sokoban_tools vagen log --config YOUR.yaml --episode-log LOG" in err
    good = write(tmp_path / "good.jsonl", records("B", "s1", 0, pattern(10)))
    assert compare.main(["--a", summary, "--b", str(good)]) == 1
    assert "is VAGEN's summary.json" in one_error(capsys)


def test_score_and_compare__a_damaged_log_keeps_its_line_and_is_not_called_a_document(tmp_path, capsys):
    lines = [r.to_line() for r in records("A", "s1", 0, pattern(10))]
    torn = tmp_path / "torn.jsonl"
    torn.write_text(lines[0])  # one row, its newline lost
    assert score.main([str(torn)]) == 1
    assert "the last line has no newline" in one_error(capsys)
    other = tmp_path / "report.json"
    other.write_text(json.dumps({"rows": 5, "mean": 2.0}, indent=2) + "\n")
    assert score.main([str(other)]) == 1
    assert "is a JSON object with the keys rows, mean, not an episode log" in one_error(capsys)


def test_score__refuses_a_log_beside_another_methods_manifest_as_compare_does(tmp_path, capsys):
    log = write(tmp_path / "run.jsonl", records("GRPO", "s1", 0, pattern(10)))
    manifest_beside(log, "CPAD")
    assert score.main([str(log)]) == 1
    err = one_error(capsys)
    assert f"{log}:1: a record of method 'GRPO', but the manifest beside the log (run.jsonl.manifest.json) is of " \
           f"method 'CPAD'" in err
    assert "give each method its own log and manifest" in err
    manifest_beside(log, "GRPO")
    assert score.main([str(log)]) == 0


@pytest.mark.slow
def test_score__names_an_evaluate_quick_look_and_evaluate_resume_completes_it(tmp_path):
    try:
        import openai  # noqa: F401
    except ImportError:
        unavailable("the openai package (the evaluate extra) is not installed")
    from sokoban_tools.integrations.served.evaluate import main as evaluate
    from sokoban_tools.integrations.served.demo_model import DEMO_MODEL, LoopbackServer, Script

    log = tmp_path / "quick.jsonl"

    def scored(*options):
        return subprocess.run([sys.executable, "-m", "sokoban_tools", "score", str(log), *options],
                              capture_output=True, text=True, cwd=tmp_path)

    with LoopbackServer(Script("shortest", keep=False)) as server:
        command = ["--base-url", server.base_url, "--model", DEMO_MODEL, "--log", str(log), "--method", "demo"]
        assert evaluate([*command, "--boards", "8"]) == 0
        first = scored()
        assert first.returncode == 1
        assert "misses 248 of the 256 validation boards" in first.stderr
        assert ("this log is an `evaluate --boards 8` quick look, and score reads complete passes only: play the "
                "other 248 boards by running the same evaluate command with --resume and without --boards"
                in first.stderr)
        assert "patched trainer" not in first.stderr
        looked = scored("--quick-look")  # what the refusal also names: the 8 boards, apart, as no result
        assert looked.returncode == 0, looked.stderr
        assert "0 validation passes and 1 quick looks" in looked.stdout
        assert re.search(r"Quick looks, no result .*\n\nmethod +run +update +success +mean return\n"
                         r"demo +seed0 +0 +8/8 100\.0%", looked.stdout), looked.stdout
        assert evaluate([*command, "--resume", "--concurrency", "8"]) == 0  # the fix, as named
    second = scored()
    assert second.returncode == 0, second.stderr
    assert re.search(r"\ndemo +seed0 +0 +256/256 100\.0%", second.stdout), second.stdout


def test_score__prints_the_exact_floors_and_ceiling_of_fairness_baselines(tmp_path, capsys):
    log = write(tmp_path / "log.jsonl", records("A", "s1", 0, pattern(60)))
    report = score.score([log])
    published = json.loads((DATA_DIR / "baselines.json").read_text(encoding="utf-8"))["splits"]["validation"]
    for entry, expected in [(report["baselines"]["overall"], published["overall"]),
                            *[(report["baselines"]["by_stratum"][label], published["by_stratum"][label])
                              for label in published["by_stratum"]]]:
        assert entry["random moves 1–4"]["success"] == expected["moves_1_4"]["success"]["float"]
        assert entry["random outputs 0–4"]["success"] == expected["outputs_0_4"]["success"]["float"]
        assert entry["optimal"] == {"success": 1.0, "expected_return": expected["optimal_return"]["float"]}
    assert score.main([str(log)]) == 0
    text = capsys.readouterr().out
    floor = published["overall"]["moves_1_4"]["success"]["float"]
    assert re.search(rf"\nrandom moves 1–4 +exact +— +{floor:.1%}", text)
    assert re.search(r"\noptimal +exact +— +100\.0% +100\.0% +100\.0% +100\.0% +10\.57", text)


def paired_logs(tmp_path, runs_a, runs_b):
    a = write(tmp_path / "a.jsonl", *[records("A", f"s{i}", 5, pattern(150 + 9 * i, i)) for i in range(runs_a)])
    b = write(tmp_path / "b.jsonl", *[records("B", f"s{i}", 5, pattern(90 + 5 * i, 3 * i + 1)) for i in range(runs_b)])
    return a, b


def test_compare__per_stratum_paired_differences_match_a_recount_of_each_strata_boards(tmp_path, capsys):
    a, b = paired_logs(tmp_path, 1, 1)
    a_won, b_won = pattern(150, 0), pattern(90, 1)
    assert compare.main(["--a", str(a), "--b", str(b), "--no-manifest", "--json"]) == 0
    (update,) = json.loads(capsys.readouterr().out)["updates"]
    assert list(update["by_stratum"]) == ["1-4", "5-8", "9-14"]
    for label, entry in update["by_stratum"].items():
        inside = STRATA == label
        table = PairedTable.of(a_won[inside], b_won[inside])
        assert (entry["boards"], entry["both"], entry["a_only"], entry["b_only"], entry["neither"]) == (
            int(inside.sum()), table.both, table.a_only, table.b_only, table.neither)
        assert entry["difference"] == pytest.approx(table.difference)
        assert entry["ci95"] == list(newcombe_paired_interval(table))
        assert entry["ci95_a"] == list(success_interval(int(a_won[inside].sum()), int(inside.sum())))
        assert entry["p_value"] == sign_test_p(table.a_only, table.b_only)
    assert sum(entry["boards"] for entry in update["by_stratum"].values()) == 256
    assert compare.main(["--a", str(a), "--b", str(b), "--no-manifest"]) == 0
    text = capsys.readouterr().out
    assert "Per stratum of shortest solution length" in text
    entry = update["by_stratum"]["5-8"]
    assert re.search(rf"\n5 +5-8 actions +105 +{entry['success_a']:.1%} \[", text)


def test_compare__several_runs_per_stratum_intervals_come_from_the_stratums_bootstrap(tmp_path, capsys):
    a, b = paired_logs(tmp_path, 3, 2)
    assert compare.main(["--a", str(a), "--b", str(b), "--no-manifest", "--json"]) == 0
    (update,) = json.loads(capsys.readouterr().out)["updates"]
    for entry in update["by_stratum"].values():
        assert entry["intervals"] == {"success_a": "hierarchical", "success_b": "hierarchical",
                                      "difference": "hierarchical", "p_value": "permutation"}
        assert entry["ci95"][0] <= entry["difference"] <= entry["ci95"][1]
        assert entry["both"] + entry["a_only"] + entry["b_only"] + entry["neither"] == entry["boards"] * 3 * 2


@pytest.mark.parametrize("runs_a, runs_b, shown, hidden", [
    (1, 1, ["A's success (1 run) and B's success (1 run): exact (Clopper-Pearson) 95% interval",
            "A - B: Newcombe's paired score interval", "p: McNemar's exact test"],
     ["percentile interval", "Bootstrap:", "sign test", "(1 runs)", "Seeds counted"]),
    (2, 1, ["A's success (2 runs) and A - B: percentile interval of a seeded hierarchical bootstrap",
            "B's success (1 run): exact (Clopper-Pearson) 95% interval (one run)", "p: permutation test over runs",
            "Bootstrap: 2,000 resamples", "p per board: per-board test, conditional on these runs", "Seeds counted"],
     ["Newcombe", "McNemar", "(1 runs)", "One run each", "Several runs"]),
])
def test_compare__one_legend_naming_only_the_intervals_shown(tmp_path, capsys, runs_a, runs_b, shown, hidden):
    a, b = paired_logs(tmp_path, runs_a, runs_b)
    assert compare.main(["--a", str(a), "--b", str(b), "--no-manifest"]) == 0
    text = capsys.readouterr().out
    for words in shown:
        assert words in text, words
    for words in hidden:
        assert words not in text, words
    assert compare.main(["--a", str(a), "--b", str(b), "--no-manifest", "--json"]) == 0
    (update,) = json.loads(capsys.readouterr().out)["updates"]
    assert update["ci95_b"] == list(success_interval(int(pattern(90, 1).sum()), 256))  # B's one run: exact


def test_compare__costs_are_whole_numbers_with_separators_and_runs_are_counted_in_words(tmp_path, capsys):
    a, b = paired_logs(tmp_path, 1, 2)
    manifest_beside(a, "A", {"gpu_hours": {"unit": "GPU hours", "value": 12.25},
                             "tokens": {"unit": "tokens", "value": 1012500}})
    manifest_beside(b, "B", {"tokens": {"unit": "tokens", "value": 997800}})
    assert compare.main(["--a", str(a), "--b", str(b)]) == 0
    text = capsys.readouterr().out
    assert "A A (1 run)" in text and "B B (2 runs)" in text and "(1 runs)" not in text
    assert "1,012,500 (1,012,500 a run)" in text and "997,800 (498,900 a run)" in text
    assert "12.25 (12.25 a run)" in text and "e+" not in text


def test_compare__a_single_update_is_drawn_as_a_forest_of_intervals_with_floor_and_ceiling(tmp_path, monkeypatch):
    a, b = paired_logs(tmp_path, 2, 1)
    report = compare.compare([a], [b], manifests=False)
    drawn = {}
    monkeypatch.setattr(compare, "interval_chart", lambda rows, series, *args, **kwargs: drawn.update(
        rows=rows, series=series, **kwargs) or b"chart")
    monkeypatch.setattr(compare, "line_chart", lambda *a, **k: pytest.fail("a single update drawn as a curve"))
    assert compare.learning_curves(report) == b"chart"
    (update,) = report["updates"]
    assert drawn["rows"] == ["all boards", "1-4 actions (136)", "5-8 actions (105)", "9-14 actions (15)"]
    parts = [update, *update["by_stratum"].values()]
    assert drawn["series"] == {
        "A A (2 runs)": [(p["success_a"], *p["ci95_a"]) for p in parts],
        "B B (1 run)": [(p["success_b"], *p["ci95_b"]) for p in parts]}
    floors = [report["baselines"]["overall"], *report["baselines"]["by_stratum"].values()]
    assert drawn["references"] == {"random moves 1–4 (exact floor)": [f["random moves 1–4"]["success"] for f in floors],
                                   "optimal (ceiling)": [1.0] * 4}


def test_compare__plots_a_single_update_and_curves_with_the_floor_as_pictures(tmp_path):
    a, b = paired_logs(tmp_path, 2, 1)
    single = compare.compare([a], [b], manifests=False)
    forest = tmp_path / "forest.png"
    forest.write_bytes(compare.learning_curves(single))
    with Image.open(forest) as image:
        assert image.size == (800, 360)
        pixels = np.asarray(image.convert("RGB"))
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 20  # drawn, not blank
    curves = compare.compare([REPO / "examples" / "episodes" / "path-follower.jsonl"],
                             [REPO / "examples" / "episodes" / "random.jsonl"])
    assert compare.learning_curves(curves) == (REPO / "images" / "learning-curves.png").read_bytes()


def test_compare__plot_of_the_worked_examples_last_update_is_the_committed_forest_plot(tmp_path, capsys):
    episodes = REPO / "examples" / "episodes"
    plot = tmp_path / "last.png"
    assert compare.main(["--a", str(episodes / "path-follower.jsonl"), "--b", str(episodes / "random.jsonl"),
                         "--updates", "15", "--plot", str(plot)]) == 0
    assert "15    9-14 actions  15" in capsys.readouterr().out
    assert plot.read_bytes() == (REPO / "images" / "comparison-last-update.png").read_bytes()


def test_compare__refuses_a_log_compared_with_itself_and_names_the_fix(tmp_path, capsys):
    log = REPO / "results" / "random-policy" / "episodes.jsonl"
    assert compare.main(["--a", str(log), "--b", str(log)]) == 1
    err = one_error(capsys)
    assert f"{log}: is given as both --a and --b with the same method 'random'" in err
    assert "give the other method's logs as --b" in err and "--method-a and --method-b" in err
    copy = tmp_path / "again.jsonl"  # another log of the same method is a comparison of two runs of one method
    shutil.copy(log, copy)
    shutil.copy(log.with_name(log.name + ".manifest.json"), copy.with_name(copy.name + ".manifest.json"))
    assert compare.main(["--a", str(log), "--b", str(copy)]) == 0
    out = capsys.readouterr().out
    assert "A and B are runs of one method." in out and "only the method differs" not in out


def test_score_and_compare__name_an_image_given_as_the_log(tmp_path, capsys):
    image = REPO / "images" / "results.png"
    assert score.main([str(image)]) == 1
    err = one_error(capsys)
    assert f"{image}: is a PNG image, not an episode log" in err and "give the .jsonl log the run wrote" in err
    assert "repair or remove that line" not in err and "UTF-8" not in err
    assert compare.main(["--a", str(image), "--b", str(REPO / "results" / "optimal" / "episodes.jsonl")]) == 1
    assert "is a PNG image" in one_error(capsys)


def test_compare__plot_says_where_it_wrote_the_chart(tmp_path, capsys):
    if importlib.util.find_spec("matplotlib") is None:
        unavailable("matplotlib draws --plot (pip install -e '.[plot]')")
    episodes = REPO / "examples" / "episodes"
    plot = tmp_path / "curves.svg"
    assert compare.main(["--a", str(episodes / "path-follower.jsonl"), "--b", str(episodes / "random.jsonl"),
                         "--plot", str(plot), "--json"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)  # the report on stdout stays one document
    assert captured.err == f"wrote {plot}: the learning curves, SVG\n" and plot.stat().st_size > 0


def test_score__leaves_out_the_mean_return_of_a_run_under_other_rewards_and_says_why(tmp_path, capsys):
    from sokoban_tools.records.manifest import new_manifest, write_manifest
    from test_manifest import example_settings

    log = write(tmp_path / "vagen.jsonl", records("VAGEN-run", "1", 0, np.ones(256, dtype=bool)))
    write_manifest(log, new_manifest("VAGEN-run", example_settings(**{  # VAGEN's scheme, as vagen log writes it
        "reward.step": 0.5, "reward.box_on_target": 0.0, "reward.box_off_target": 0.0, "reward.solved": 10.0})))
    report = score.score([log])
    [group] = report["groups"]
    assert group["runtime_rewards"] is False and group["mean_return"] == 10.5  # kept, on its own scale
    text = score.render(report)
    row = next(line for line in text.splitlines() if line.startswith("VAGEN-run "))  # the success table's
    assert row.endswith("—") and "10.50" not in row
    assert "Mean return left out for VAGEN-run 1 update 0: the run manifest declares other rewards than the " \
           "runtime's (reward.*), so the returns are on another scale than the floors' and the ceiling's; on " \
           "their own scale: 10.50" in text
    runtime = write(tmp_path / "runtime.jsonl", records("GRPO", "1", 0, np.ones(256, dtype=bool)))
    [group] = score.score([runtime])["groups"]  # no manifest: the runtime's rewards, and its return stands
    assert group["runtime_rewards"] is True and "Mean return left out" not in score.render(score.score([runtime]))
