"""score and compare: figures recomputed independently on constructed logs, and every bad log
refused with its file and line."""

import json
import math
import os
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import sokoban_fairness
from conftest import DATA_DIR
from sokoban_tools.evaluation import compare, score
from sokoban_tools.records.episodes import EpisodeRecord
from sokoban_tools.protocol import stratum_of
from sokoban_tools.records.rows import read_rows
from sokoban_tools.evaluation.stats import PairedTable, exact_interval, newcombe_paired_interval

DIGEST = sokoban_fairness.PUBLISHED_FILES["fairness/evaluation.jsonl"]["sha256"]
ROWS = read_rows(DATA_DIR / "evaluation.jsonl")
IDS = [row.task_id for row in ROWS]


def records(method, run, update, won, digest=DIGEST, ids=IDS):
    return [EpisodeRecord(method, run, "validation", update, task_id, bool(w), 5, 10.5 if w else -1.5, digest)
            for task_id, w in zip(ids, won)]


def write(path, *groups, extra_lines=()):
    lines = [r.to_line() for group in groups for r in group] + list(extra_lines)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def pattern(wins, offset=0):
    """A won vector with exactly ``wins`` wins, spread over the boards."""
    won = np.zeros(len(IDS), dtype=bool)
    won[(np.arange(wins) * 7 + offset) % len(IDS)] = True
    assert won.sum() == wins
    return won


def test_score__counts_rates_and_exact_intervals_per_pass_stratum_and_length(tmp_path):
    won = pattern(100)
    training = EpisodeRecord("GRPO", "s1", "training", 3, "train-00001", True, 4, 10.7, None)
    log = write(tmp_path / "log.jsonl", records("GRPO", "s1", 0, won), [training])
    report = score.score([log])
    assert report["training_rows_ignored"] == 1 and report["validation_rows"] == len(IDS)
    (group,) = report["groups"]
    assert (group["method"], group["run"], group["update"], group["boards"], group["wins"]) == ("GRPO", "s1", 0, 256, 100)
    assert group["success"] == 100 / 256
    assert group["ci95"] == list(exact_interval(100, 256))
    strata = Counter(stratum_of(r.shortest_solution_length) for r in ROWS)
    stratum_wins = Counter(stratum_of(r.shortest_solution_length) for r, w in zip(ROWS, won) if w)
    for label, entry in group["by_stratum"].items():
        assert (entry["boards"], entry["wins"]) == (strata[label], stratum_wins[label])
    lengths = Counter(r.shortest_solution_length for r in ROWS)
    assert {int(n): e["boards"] for n, e in group["by_length"].items()} == dict(lengths)
    assert sum(e["wins"] for e in group["by_length"].values()) == 100


def test_score__prints_a_table_and_json(tmp_path, capsys):
    log = write(tmp_path / "log.jsonl", records("GRPO", "s1", 0, pattern(10)), records("GRPO", "s1", 5, pattern(50)))
    assert score.main([str(log)]) == 0
    text = capsys.readouterr().out
    assert "2 validation passes" in text and "50/256 19.5%" in text and "0 training rows ignored" in text
    assert score.main([str(log), "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    assert [g["update"] for g in groups] == [0, 5]
    assert {"method", "run", "update", "boards", "wins", "success", "ci95", "by_stratum"} <= set(groups[0])


def test_compare__one_run_each_gives_the_paired_table_newcombe_interval_and_exact_mcnemar(tmp_path, capsys):
    a_won = pattern(120)
    b_won = a_won.copy()
    unsolved = np.flatnonzero(~a_won)
    a_won[unsolved[:30]] = True    # 30 boards only A solves
    b_won[unsolved[30:42]] = True  # 12 boards only B solves
    a_log = write(tmp_path / "a.jsonl", records("CPAD", "s1", 10, a_won))
    b_log = write(tmp_path / "b.jsonl", records("GRPO", "s1", 10, b_won))
    assert compare.main(["--a", str(a_log), "--b", str(b_log), "--json", "--no-manifest"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["updates"]
    both, a_only = int(np.sum(a_won & b_won)), int(np.sum(a_won & ~b_won))
    b_only, neither = int(np.sum(~a_won & b_won)), int(np.sum(~a_won & ~b_won))
    assert (a_only, b_only) == (30, 12)
    assert (entry["both"], entry["a_only"], entry["b_only"], entry["neither"]) == (both, a_only, b_only, neither)
    assert entry["difference"] == pytest.approx((a_only - b_only) / 256)
    assert entry["ci95"] == list(newcombe_paired_interval(PairedTable(both, a_only, b_only, neither)))
    n = a_only + b_only
    exact = min(1.0, 2 * sum(math.comb(n, k) for k in range(min(a_only, b_only) + 1)) / 2 ** n)
    assert entry["p_value"] == pytest.approx(exact, rel=1e-12)


def test_compare__several_runs_bootstrap_is_seeded_and_stated(tmp_path, capsys):
    a_log = write(tmp_path / "a.jsonl", *[records("A", f"s{i}", u, pattern(60 + 40 * u // 5 + i, i))
                                          for i in range(3) for u in (0, 5)])
    b_log = write(tmp_path / "b.jsonl", *[records("B", f"s{i}", u, pattern(60 + i, 2 * i)) for i in range(2) for u in (0, 5, 10)])
    args = ["--a", str(a_log), "--b", str(b_log), "--plot", str(tmp_path / "curves.png"), "--no-manifest"]
    assert compare.main(args) == 1  # B validated at update 10 too: not on both runs' schedules
    assert "only B validated at update(s) 10: not on both runs' schedules" in capsys.readouterr().err
    assert not (tmp_path / "curves.png").exists()
    args += ["--updates", "0", "5"]
    assert compare.main(args) == 0
    text = capsys.readouterr().out
    assert "2,000 resamples, seed 0" in text and "Settings NOT checked (--no-manifest)" in text
    first_png = (tmp_path / "curves.png").read_bytes()
    assert first_png.startswith(b"\x89PNG")
    assert compare.main(args + ["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (tmp_path / "curves.png").read_bytes() == first_png
    late = report["updates"][1]
    assert late["runs_a"] == ["s0", "s1", "s2"] and late["runs_b"] == ["s0", "s1"]
    assert late["both"] + late["a_only"] + late["b_only"] + late["neither"] == 256 * 3 * 2
    assert late["ci95"][0] < late["difference"] < late["ci95"][1] and late["difference"] > 0
    assert late["probability_of_improvement"] == 1.0  # every run of A (100-102 wins) above every run of B (60-61)


def test_compare__needs_a_method_name_when_a_log_holds_several(tmp_path, capsys):
    log = write(tmp_path / "both.jsonl", records("A", "s1", 0, pattern(9)), records("B", "s1", 0, pattern(19)))
    assert compare.main(["--a", str(log), "--b", str(log), "--no-manifest"]) == 1
    assert "choose one with --method-a" in capsys.readouterr().err
    assert compare.main(["--a", str(log), "--b", str(log), "--method-a", "A", "--method-b", "B", "--json",
                         "--no-manifest"]) == 0
    assert json.loads(capsys.readouterr().out)["updates"][0]["b_only"] >= 10


def bad_logs():
    """(name, lines, expected message) of every refused log; each names the file and line."""
    good = [r.to_line() for r in records("A", "s1", 0, pattern(10))]
    other = "0" * 64
    duplicated = good[:5] + [good[3]] + good[5:]
    unknown = good[:-1] + [good[-1].replace(IDS[-1], "eval-9999x")]
    return [
        ("stale digest", [line.replace(DIGEST, other) for line in good], r"stale\.jsonl:1: evaluation_sha256 0{64} is not"),
        ("missing board", good[:-1], rf"missing\.jsonl: an incomplete validation pass in lines 1–255: .*misses 1 of "
                                     rf"the 256 validation boards \({IDS[-1]}\)"),
        ("repeated board", duplicated, rf"repeated\.jsonl:6: {IDS[3]} repeats in .*first at .*repeated\.jsonl:4"),
        ("unknown board", unknown, r"unknown\.jsonl:256: task_id 'eval-9999x' is not one of the 256"),
        ("malformed row", good[:2] + ['{"method": "A"}'] + good[2:], r"malformed\.jsonl:3: keys are"),
    ]


@pytest.mark.parametrize("case", range(5))
def test_score_and_compare__refuse_every_bad_log_naming_file_and_line(tmp_path, capsys, case):
    name, lines, message = bad_logs()[case]
    log = tmp_path / f"{name.split()[0]}.jsonl"
    log.write_text("".join(line + "\n" for line in lines))
    good = write(tmp_path / "good.jsonl", records("B", "s1", 0, pattern(10)))
    assert score.main([str(log)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert re.search(message, err), err
    assert compare.main(["--a", str(log), "--b", str(good), "--no-manifest"]) == 1
    assert f"{log.name}:" in capsys.readouterr().err


def test_compare__refuses_logs_of_different_board_sets(tmp_path, capsys):
    a_log = write(tmp_path / "a.jsonl", records("A", "s1", 0, pattern(10)))
    b_log = write(tmp_path / "b.jsonl", records("B", "s1", 0, pattern(10), digest="1" * 64))
    assert compare.main(["--a", str(a_log), "--b", str(b_log), "--no-manifest"]) == 1
    err = capsys.readouterr().err
    assert "b.jsonl:1: evaluation_sha256 111111111111… differs from" in err and "a.jsonl:1" in err
    assert "different board sets" in err


def test_score__refuses_a_stale_evaluation_file(tmp_path, capsys):
    copy = tmp_path / "evaluation.jsonl"
    copy.write_bytes((DATA_DIR / "evaluation.jsonl").read_bytes()[:-300].rsplit(b"\n", 1)[0] + b"\n")
    log = write(tmp_path / "log.jsonl", records("A", "s1", 0, pattern(10)))
    assert score.main([str(log), "--evaluation", str(copy)]) == 1
    assert "fairness/evaluation.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize("module", [score, compare])
def test_commands__have_help(module, capsys):
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])
    assert done.value.code == 0 and "--json" in capsys.readouterr().out


def test_docs__document_the_episode_log_schema_key_by_key():
    from conftest import REPO
    from sokoban_tools.records.episodes import EPISODE_KEYS

    page = (REPO / "docs" / "scoring.md").read_text(encoding="utf-8")
    section = page.split("## Episode logs", 1)[1].split("\n## ", 1)[0]
    assert tuple(re.findall(r"^\| `(\w+)` \|", section, re.M)) == EPISODE_KEYS


def test_score__a_log_of_training_rows_only_has_nothing_to_score(tmp_path, capsys):
    log = write(tmp_path / "train.jsonl", [EpisodeRecord("A", "s1", "training", 1, "train-00001", False, 15, -1.5, None)])
    assert score.main([str(log)]) == 1
    assert f"{log}: holds no validation rows (1 training rows)" in capsys.readouterr().err


def test_score__a_log_with_keys_in_another_order_scores_identically(tmp_path):
    ordered = records("GRPO", "s1", 0, pattern(90)) + records("GRPO", "s1", 5, pattern(140, 3))
    rng = np.random.default_rng(7)
    shuffled = []
    for record in ordered:  # another trainer's writer: each row's keys in its own order
        row = record.as_dict()
        keys = [list(row)[i] for i in rng.permutation(len(row))]
        shuffled.append(json.dumps({key: row[key] for key in keys}))
    assert sum(line.startswith('{"method"') for line in shuffled) < len(shuffled) / 2
    a = score.score([write(tmp_path / "ours.jsonl", ordered)])
    b = score.score([write(tmp_path / "theirs.jsonl", [], extra_lines=shuffled)])
    assert a["groups"] == b["groups"] and a["validation_rows"] == b["validation_rows"] == 512


@pytest.mark.parametrize("change, message", [
    (lambda row: {**row, "seed": 3}, r"unknown \['seed'\]"),
    (lambda row: {key: value for key, value in row.items() if key != "won"}, r"missing \['won'\]"),
    (lambda row: {**row, "update": "5"}, "update must be a non-negative integer"),
])
def test_score__any_key_order_stays_strict_on_keys_and_types(tmp_path, capsys, change, message):
    rows = [record.as_dict() for record in records("GRPO", "s1", 0, pattern(9))]
    rows[4] = change(dict(reversed(rows[4].items())))
    log = write(tmp_path / "log.jsonl", [], extra_lines=[json.dumps(row) for row in rows])
    assert score.main([str(log)]) == 1
    assert re.search(rf"log\.jsonl:5: .*{message}", capsys.readouterr().err)


# --- every path argument checked first: one line naming it, exit 1, nothing written -------------

def special_paths(tmp_path):
    """(name, path) of what is not a readable regular file; each must be refused at once."""
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    return [("a FIFO", fifo, "is not a regular file but a FIFO"),
            ("/dev/zero", zero, "is not a regular file but a character device"),
            ("a directory", folder, "is not a regular file but a directory"),
            ("missing", tmp_path / "missing.jsonl", r"cannot be read \(No such file or directory\)")]


def refused_in_one_line(capsys, path, message):
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: ") or err.startswith(f"error: fairness/evaluation.jsonl ({path})"), err
    assert re.search(message, err) and err.count("\n") == 1 and "Traceback" not in err


def test_score_and_compare__refuse_special_files_as_logs_manifests_and_evaluation(tmp_path, capsys):
    good = write(tmp_path / "good.jsonl", records("B", "s1", 0, pattern(10)))
    for _, path, message in special_paths(tmp_path):
        assert score.main([str(path)]) == 1
        refused_in_one_line(capsys, path, message)
        assert compare.main(["--a", str(good), "--b", str(path), "--no-manifest"]) == 1
        refused_in_one_line(capsys, path, message)
        assert score.main([str(good), "--evaluation", str(path)]) == 1
        refused_in_one_line(capsys, path, message)
    manifest = tmp_path / "good.jsonl.manifest.json"
    (tmp_path / "targets").mkdir()
    for _, path, message in special_paths(tmp_path / "targets")[:3]:  # a manifest that resolves to each
        if manifest.exists() or manifest.is_symlink():
            manifest.unlink()
        manifest.symlink_to(path)
        assert compare.main(["--a", str(good), "--b", str(good)]) == 1
        refused_in_one_line(capsys, manifest, message)


def test_score__names_an_empty_log(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    good = write(tmp_path / "good.jsonl", records("B", "s1", 0, pattern(10)))
    assert score.main([str(good), str(empty)]) == 1
    refused_in_one_line(capsys, empty, "is empty, but an episode log holds one JSON line per finished episode")


@pytest.mark.parametrize("where", ["a directory", "under /proc", "under a file", "a device"])
def test_compare__refuses_a_plot_it_cannot_write_before_the_work(tmp_path, capsys, monkeypatch, where):
    plot = {"a directory": tmp_path, "under /proc": Path("/proc/curves.png"),
            "under a file": tmp_path / "good.jsonl" / "curves.png", "a device": Path("/dev/null")}[where]
    good = write(tmp_path / "good.jsonl", records("B", "s1", 0, pattern(10)))
    monkeypatch.setattr(compare, "compare", lambda *a, **k: pytest.fail("the work started"))
    assert compare.main(["--a", str(good), "--b", str(good), "--no-manifest", "--plot", str(plot)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --plot ") and err.count("\n") == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.jsonl"]
