"""score and compare: figures recomputed independently on constructed logs, and every bad log
refused with its file and line."""

import json
import math
import re
from collections import Counter

import numpy as np
import pytest

import sokoban_fairness
from conftest import DATA_DIR
from sokoban_tools.evaluation import compare, score
from sokoban_tools.runtime.episodes import EpisodeRecord
from sokoban_tools.protocol import stratum_of
from sokoban_tools.rows import read_rows
from sokoban_tools.evaluation.stats import PairedTable, newcombe_paired_interval, wilson_interval

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


def test_score__counts_rates_and_wilson_intervals_per_pass_stratum_and_length(tmp_path):
    won = pattern(100)
    training = EpisodeRecord("GRPO", "s1", "training", 3, "train-00001", True, 4, 10.7, None)
    log = write(tmp_path / "log.jsonl", records("GRPO", "s1", 0, won), [training])
    report = score.score([log])
    assert report["training_rows_ignored"] == 1 and report["validation_rows"] == len(IDS)
    (group,) = report["groups"]
    assert (group["method"], group["run"], group["update"], group["boards"], group["wins"]) == ("GRPO", "s1", 0, 256, 100)
    assert group["success"] == 100 / 256
    assert group["ci95"] == list(wilson_interval(100, 256))
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
    assert compare.main(["--a", str(a_log), "--b", str(b_log), "--json"]) == 0
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
    args = ["--a", str(a_log), "--b", str(b_log), "--plot", str(tmp_path / "curves.png")]
    assert compare.main(args) == 0
    text = capsys.readouterr().out
    assert "2,000 resamples, seed 0" in text and "Not compared, only B validated at update(s) 10" in text
    first_png = (tmp_path / "curves.png").read_bytes()
    assert first_png.startswith(b"\x89PNG")
    assert compare.main(args + ["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (tmp_path / "curves.png").read_bytes() == first_png
    late = report["updates"][1]
    assert late["runs_a"] == ["s0", "s1", "s2"] and late["runs_b"] == ["s0", "s1"]
    assert late["both"] + late["a_only"] + late["b_only"] + late["neither"] == 256 * 3 * 2
    assert late["ci95"][0] < late["difference"] < late["ci95"][1] and late["difference"] > 0
    assert 0.5 < late["probability_of_improvement"] < 1


def test_compare__needs_a_method_name_when_a_log_holds_several(tmp_path, capsys):
    log = write(tmp_path / "both.jsonl", records("A", "s1", 0, pattern(9)), records("B", "s1", 0, pattern(19)))
    assert compare.main(["--a", str(log), "--b", str(log)]) == 1
    assert "choose one with --method-a" in capsys.readouterr().err
    assert compare.main(["--a", str(log), "--b", str(log), "--method-a", "A", "--method-b", "B", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["updates"][0]["b_only"] >= 10


def bad_logs():
    """(name, lines, expected message) of every refused log; each names the file and line."""
    good = [r.to_line() for r in records("A", "s1", 0, pattern(10))]
    other = "0" * 64
    duplicated = good[:5] + [good[3]] + good[5:]
    unknown = good[:-1] + [good[-1].replace(IDS[-1], "eval-9999x")]
    return [
        ("stale digest", [line.replace(DIGEST, other) for line in good], r"stale\.jsonl:1: evaluation_sha256 0{64} is not"),
        ("missing board", good[:-1], rf"missing\.jsonl:1: .*misses 1 of the 256 validation boards \({IDS[-1]}\)"),
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
    assert compare.main(["--a", str(log), "--b", str(good)]) == 1


def test_compare__refuses_logs_of_different_board_sets(tmp_path, capsys):
    a_log = write(tmp_path / "a.jsonl", records("A", "s1", 0, pattern(10)))
    b_log = write(tmp_path / "b.jsonl", records("B", "s1", 0, pattern(10), digest="1" * 64))
    assert compare.main(["--a", str(a_log), "--b", str(b_log)]) == 1
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
    from sokoban_tools.runtime.episodes import EPISODE_KEYS

    page = (REPO / "docs" / "scoring.md").read_text(encoding="utf-8")
    section = page.split("## Episode logs", 1)[1].split("\n## ", 1)[0]
    assert tuple(re.findall(r"^\| `(\w+)` \|", section, re.M)) == EPISODE_KEYS


def test_score__a_log_of_training_rows_only_has_nothing_to_score(tmp_path, capsys):
    log = write(tmp_path / "train.jsonl", [EpisodeRecord("A", "s1", "training", 1, "train-00001", False, 15, -1.5, None)])
    assert score.main([str(log)]) == 1
    assert "hold no validation rows" in capsys.readouterr().err
