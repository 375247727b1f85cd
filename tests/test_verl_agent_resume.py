"""A fair run killed, resumed and restarted: the log and the boards are those of a run never interrupted.

``verl_agent_fit.py`` plays a mirror of the patched ``fit`` loop (the tree's real
``make_envs`` and every hook of the patch, a deterministic scripted model, the local
backend) in forked trainer processes and kills them with ``SIGKILL`` at a random
training turn, validation turn, checkpoint-state write and log append (a torn line), or
at a random time. Then the run is started again as its user would: resumed from its
latest checkpoint, or from step 0 without checkpoints. The final log must be
byte-identical to an uninterrupted run's, the sampler must have drawn the same boards,
nothing the killed run wrote may be lost (it is in the log or a side file), and
``score`` must report the history. The kill points are drawn from a seed that is
printed (``RESUME_SEED`` sets it).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from sokoban_tools.evaluation.score import render, score
from sokoban_tools.records.episodes import read_episodes, side_files
from sokoban_tools.records.manifest import manifest_path, read_manifest
from sokoban_tools.records.rows import DataError
from test_verl_agent_patched_trainer import patched_copy, require

pytestmark = pytest.mark.slow  # it runs the patched verl-agent, as the other such tests are marked

DRIVER = Path(__file__).resolve().parent / "verl_agent_fit.py"
# text observations: what is killed and resumed does not depend on them, and they halve the time
SMALL = ["data.train_batch_size=4", "env.rollout.n=2", "data.val_batch_size=128", "trainer.total_training_steps=4",
         "trainer.test_freq=2", "env.sokoban.mode=tiny_rgb_array"]
CHECKPOINTS = SMALL + ["trainer.save_freq=2"]  # resume_mode=auto: verl-agent's default
NO_CHECKPOINTS = SMALL + ["trainer.save_freq=-1"]  # run_sokoban.sh's: a restart starts from step 0
EVENTS = ("rollout", "validation", "checkpoint", "append")
SEED = int(os.environ.get("RESUME_SEED", random.SystemRandom().randrange(10**6)))


def drive(tree: Path, work: Path, runs: list[dict]) -> list[dict]:
    """The driver's report of ``runs``, played one after the other in ``work``."""
    work.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, str(DRIVER), json.dumps({"tree": str(tree), "work": str(work),
                                                                      "runs": runs})],
                          cwd=work, capture_output=True, text=True, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT "):])["runs"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    require("torch", "omegaconf", "hydra")
    return patched_copy(tmp_path_factory.mktemp("resume") / "verl-agent")


@pytest.fixture(scope="module")
def references(tree, tmp_path_factory):
    """Uninterrupted runs, with and without checkpoints: their logs, sampler states and events."""
    work = tmp_path_factory.mktemp("references")
    with_checkpoints, without = drive(tree, work, [{"folder": "a", "overrides": CHECKPOINTS},
                                                   {"folder": "b", "overrides": NO_CHECKPOINTS}])
    for run in (with_checkpoints, without):
        assert run["exit"] == 0 and run["error"] is None and not run["side_files"]
    return {"checkpoints": with_checkpoints, "none": without}


def lines(text: str | None) -> Counter:
    return Counter(text.splitlines()) if text else Counter()


def check_final(final: dict, reference: dict, killed_logs: list[str | None], note: str) -> None:
    """The run as an uninterrupted one, and every line the killed runs wrote kept somewhere."""
    assert final["exit"] == 0 and final["error"] is None, (note, final["error"])
    assert final["log"] == reference["log"], note  # byte-identical: each (phase, update, board) once
    assert final["sampler"] == reference["sampler"], note  # the same draws, in the same order
    kept = lines(final["log"]) + sum((lines(text) for text in final["side_files"].values()), Counter())
    for text in killed_logs:
        written = Counter(line for line in lines(text).elements())
        assert not written - kept, f"{note}: a line the killed run wrote is neither in the log nor set aside"


@pytest.fixture(scope="module")
def matrix(tree, references, tmp_path_factory):
    """Each kill point, with checkpoints (then resumed) and without (then restarted from step 0):
    the plan, every run's report, and the folder."""
    work = tmp_path_factory.mktemp("matrix")
    rng = random.Random(SEED)
    plan = []  # (name, config, reference, kills); after the kills, one run to the end
    for config, reference, how in ((CHECKPOINTS, references["checkpoints"], "resumed"),
                                   (NO_CHECKPOINTS, references["none"], "restarted")):
        counts = reference["events"]
        for event in EVENTS:
            if counts[event]:
                plan.append((f"{how}-{event}", config, reference, [{"kill": [event, rng.randint(1, counts[event])]}]))
        seconds = reference["seconds"]
        plan.append((f"{how}-timer", config, reference, [{"kill_after": round(rng.uniform(0.2, 0.6) * seconds, 2)}]))
        first = rng.choice(["rollout", "validation", "append"])
        # the second run validates first (before training): a pass has 2 chunks of 15 turns
        plan.append((f"{how}-twice", config, reference, [{"kill": [first, rng.randint(1, counts[first])]},
                                                         {"kill": ["validation", rng.randint(1, 30)]}]))
    runs = [{"folder": name, "overrides": config, **kill} for name, config, _, kills in plan for kill in kills]
    runs += [{"folder": name, "overrides": config} for name, config, _, _ in plan]  # then each to its end
    return plan, runs, drive(tree, work, runs), work


def test_killed_anywhere_then_resumed_or_restarted_the_log_and_draws_are_an_uninterrupted_runs(matrix):
    plan, runs, reports, work = matrix
    killed = reports[:len(runs) - len(plan)]
    table = []
    for (name, _, reference, kills), final in zip(plan, reports[len(runs) - len(plan):]):
        mine = [report for run, report in zip(runs, killed) if run["folder"] == name]
        note = f"{name} (RESUME_SEED={SEED}, kills {[k.get('kill') or k.get('kill_after') for k in kills]})"
        if name.endswith("-timer") and not any(report["killed"] for report in mine):
            # on a loaded machine the run can end before its timer: no interruption happened, and a
            # second run of a finished one with checkpoints is verl-agent's resume past the budget
            assert all(report["exit"] == 0 and report["error"] is None for report in mine), note
            table.append((name, "finished before the timer: not an interruption"))
            continue
        assert all(report["killed"] for report in mine if report["exit"] != 0 or report["error"]), note
        check_final(final, reference, [report["log"] for report in mine], note)
        table.append((name, [k.get("kill") or k.get("kill_after") for k in kills],
                       [r["killed"] for r in mine], sorted(final["side_files"])))
        log = work / name / "checkpoints" / "episodes.jsonl"
        report = score([log])
        [schedule] = report["schedule"]
        assert schedule["missing"] == schedule["unexpected"] == [] and not schedule["stopped_early"], note
        assert [g["update"] for g in report["groups"]] == [0, 2, 4]
        if any(report["log"] for report in mine):  # the killed run wrote something: set aside, reported
            assert side_files(log) and (schedule["resumed_from"] or schedule["restarts"]), note
        if name.startswith("restarted"):
            assert schedule["resumed_from"] == [], note
    print(f"\nkill-and-resume matrix (RESUME_SEED={SEED}):")
    for row in table:
        print("  ", *row)


def test_score_reports_a_resumed_run_and_a_missing_pass_by_update(matrix, tmp_path):
    """A resumed run is reported as such, with its side files; a pass that is not on the
    schedule is named by update."""
    _, _, _, work = matrix
    log = work / "resumed-checkpoint" / "checkpoints" / "episodes.jsonl"  # killed after records were written
    report = score([log])
    [schedule] = report["schedule"]
    assert schedule["missing"] == schedule["unexpected"] == []
    text = render(report)
    history = ([f"resumed from update {schedule['resumed_from'][0]}"] if schedule["resumed_from"] else
               ["restarted from update 0"]) + ["side files beside the log"]
    assert all(part in text for part in history), text
    # the pass at update 2 moved out by hand: a missing pass, named
    records = [r for r in read_episodes(log) if not (r.phase == "validation" and r.update == 2)]
    trimmed = tmp_path / "trimmed.jsonl"
    trimmed.write_text("".join(r.to_line() + "\n" for r in records))
    manifest_path(trimmed).write_text(manifest_path(log).read_text())
    [schedule] = score([trimmed])["schedule"]
    assert schedule["missing"] == [2] and "MISSING validation pass at update 2" in render(score([trimmed]))


STATE = "checkpoints/global_step_4/sokoban_fairness.json"
REFUSED = [("missing", [{"delete": STATE}], [], "missing"),
           ("tampered", [{"edit": STATE, "key": ["sampler", "draws_sha256"], "value": "0" * 64}], [],
            "altered after state_dict"),
           ("rewound", [{"edit": STATE, "key": ["sampler", "updates_drawn"], "value": 3}], [], "updates_drawn is 3"),
           ("other-seed", [], ["env.seed=7"], "seed"),
           ("other-release", [{"edit": STATE, "key": ["train_sha256"], "value": "1" * 64}], [],
            "another dataset release"),
           ("other-step", [{"edit": STATE, "key": ["update"], "value": 2}], [], "copied from another checkpoint"),
           ("update-not-a-number", [{"edit": STATE, "key": ["update"], "value": "4"}], [],
            "copied from another checkpoint"),
           # step 2's state in step 4's folder, its update edited to match: its sampler drew 2 batches, not 4
           ("copied-from-step-2", [{"copy_file": STATE.replace("_4/", "_2/"), "to": STATE},
                                   {"edit": STATE, "key": ["update"], "value": 4}], [],
            "updates_drawn is 2, but the checkpoint is of step 4"),
           ("other-run-label", [], ["env.fairness_run=another"],
            "the checkpoint is of env.fairness_run='grpo_qwen2.5_vl_3b', but this resume has env.fairness_run='another'"),
           ("labels-removed", [{"edit": STATE, "key": ["fairness_run"], "value": None}], [],
            "env.fairness_run=None"),
           ("log-counts-altered", [{"edit": STATE, "key": ["log", "training"], "value": -1}], [], "log counts"),
           ("format-1", [{"edit": STATE, "key": ["format"], "value": "sokoban-fairness checkpoint 1"}], [],
            "format 'sokoban-fairness checkpoint 1'")]


def test_a_checkpoint_with_a_missing_tampered_or_foreign_sampler_state_is_refused_naming_it_and_a_torn_manifest_is_set_aside(
        tree, tmp_path):
    runs = [{"folder": "done", "overrides": CHECKPOINTS}]
    runs += [{"folder": name, "overrides": CHECKPOINTS + overrides, "prepare": [{"copy": "done"}, *prepare]}
             for name, prepare, overrides, _ in REFUSED]
    runs += [{"folder": "torn", "overrides": NO_CHECKPOINTS}, {"folder": "torn", "overrides": NO_CHECKPOINTS,
                                                                "prepare": [{"tear": "checkpoints/episodes.jsonl"
                                                                                     ".manifest.json"}]}]
    done, *refused, first, again = drive(tree, tmp_path, runs)
    assert done["exit"] == 0
    for (name, _, _, expected), resumed in zip(REFUSED, refused):
        assert resumed["exit"] == 1 and resumed["error"].startswith("CheckpointStateError: "), (name, resumed["error"])
        assert str(tmp_path / name / STATE) in resumed["error"] and expected in resumed["error"], resumed["error"]
        assert "trainer.resume_mode=disable" in resumed["error"]  # the way out
        assert resumed["log"] == done["log"] and not resumed["side_files"]  # refused before anything moved
    # a half-written manifest found at start: set aside, reported, written again
    assert again["exit"] == 0 and again["log"] == first["log"]
    path = manifest_path(tmp_path / "torn" / "checkpoints" / "episodes.jsonl")
    [kept] = [p for p in path.parent.iterdir() if p.name.endswith(".torn-manifest.manifest.json")]
    assert len(kept.read_text()) == 100
    assert read_manifest(path)["costs"]["gen"]["value"] == 4 * 1.0  # the restarted run's four steps only


def test_a_resume_whose_log_was_deleted_or_cut_is_refused_naming_the_missing_records(tree, tmp_path):
    """The passes before the checkpoint cannot be played again: a resumed run over a log that lost
    them would leave a log that passes for a whole run. Refused before anything moves; the way out
    (put the log back, or start again from step 0) works."""
    log = "checkpoints/episodes.jsonl"
    runs = [{"folder": "done", "overrides": CHECKPOINTS},
            {"folder": "deleted", "overrides": CHECKPOINTS, "prepare": [{"copy": "done"}, {"delete": log}]},
            {"folder": "cut", "overrides": CHECKPOINTS, "prepare": [{"copy": "done"}, {"edit_lines": log, "keep": 528}]},
            {"folder": "deleted", "overrides": CHECKPOINTS, "prepare": [{"copy_file": f"../done/{log}", "to": log}]},
            {"folder": "cut", "overrides": CHECKPOINTS + ["trainer.resume_mode=disable"]}]
    done, deleted, cut, restored, restarted = drive(tree, tmp_path, runs)
    assert done["exit"] == 0
    # the checkpoint of step 4 was saved after its pass, which the resume plays again (val_before_train)
    rows = [json.loads(line) for line in done["log"].splitlines()]
    kept = len(rows) - sum(row["phase"] == "validation" and row["update"] == 4 for row in rows)
    for refused, holds in ((deleted, 0), (cut, 528)):
        assert refused["exit"] == 1 and refused["error"].startswith("ResumedLogError: "), refused["error"]
        assert f"holds {holds} of the {kept} episode records" in refused["error"], refused["error"]
        assert "global_step_4/sokoban_fairness.json" in refused["error"]
        assert "trainer.resume_mode=disable" in refused["error"] and not refused["side_files"]
    assert cut["log"] == "".join(line + "\n" for line in done["log"].splitlines()[:528])  # nothing moved
    assert restored["exit"] == 0 and restored["error"] is None  # the log put back: resumed
    assert restarted["exit"] == 0 and restarted["log"] == done["log"]  # from step 0: the cut log set aside
    assert sorted(restarted["side_files"]) == ["episodes.jsonl.aside-1.restart.jsonl"]


def test_without_validation_first_a_resumed_run_keeps_the_pass_its_checkpoint_followed(tree, tmp_path):
    """With trainer.val_before_train=False nothing plays the checkpoint's pass again, so it stays in the
    log: killed in the step after checkpoint 2, the resumed run's log is the uninterrupted run's."""
    config = CHECKPOINTS + ["trainer.val_before_train=False"]
    reference, _, final = drive(tree, tmp_path, [{"folder": "reference", "overrides": config},
                                                 {"folder": "killed", "overrides": config, "kill": ["rollout", 40]},
                                                 {"folder": "killed", "overrides": config}])
    assert reference["exit"] == 0 and final["exit"] == 0, final["error"]
    assert final["log"] == reference["log"]
    [schedule] = score([tmp_path / "killed" / "checkpoints" / "episodes.jsonl"])["schedule"]
    assert schedule["missing"] == schedule["unexpected"] == []


def test_a_restart_from_step_0_spends_from_zero_even_when_the_old_log_is_gone(tree, tmp_path):
    """The previous run's costs are kept beside the log, not carried into the new run's manifest."""
    first, again = drive(tree, tmp_path, [{"folder": "a", "overrides": NO_CHECKPOINTS},
                                          {"folder": "a", "overrides": NO_CHECKPOINTS,
                                           "prepare": [{"delete": "checkpoints/episodes.jsonl"}]}])
    assert first["exit"] == again["exit"] == 0
    log = tmp_path / "a" / "checkpoints" / "episodes.jsonl"
    assert read_manifest(manifest_path(log))["costs"]["gen"]["value"] == 4 * 1.0  # four steps, not eight
    [kept] = [p for p in log.parent.iterdir() if p.name.endswith(".restart.manifest.json")]
    assert json.loads(kept.read_text())["costs"]["gen"]["value"] == 4 * 1.0


@pytest.mark.parametrize("edit, named", [
    (lambda row: {**row, "phase": "train"}, "phase"),
    (lambda row: {**row, "update": "3"}, "update"),
    (lambda row: {key: value for key, value in row.items() if key != "phase"}, "phase"),
])
def test_a_checkpoint_counting_a_log_with_a_malformed_line_names_the_file_line_and_fix(tmp_path, edit, named):
    from sokoban_tools.integrations.verl_agent.resume import log_counts
    from sokoban_tools.records.episodes import EpisodeRecord

    good = EpisodeRecord("grpo", "r", "training", 1, "train-00000", False, 2, -0.2, None, "UL").to_line()
    log = tmp_path / "log.jsonl"
    log.write_text(good + "\n" + json.dumps(edit(json.loads(good))) + "\n")
    with pytest.raises(DataError, match=rf"{log}:2: .*{named}.*; repair or remove that line"):
        log_counts(log, 1)
    log.write_text(good + "\n")
    assert log_counts(log, 1) == {"training": 1, "validation": 0, "validation_at_step": 0}
