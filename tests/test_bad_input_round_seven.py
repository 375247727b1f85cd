"""Bad input and faults, round seven (issue 50), each refused in one line naming the file and the
fix, before anything is read or written: a training run's checkpoint and its log at resume, the
train command's faults and options, an Inspect log whose records are not its model's answers,
and the model-page file of ``leaderboard --eval-results``."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from sokoban_tools.evaluation import leaderboard
from sokoban_tools.evaluation.hub_benchmark import eval_results
from sokoban_tools.evaluation.leaderboard import ENTRY
from sokoban_tools.layout import REAL_MODEL_ENTRY, RESULTS_DIR, SOURCE_POOL_DATA
from sokoban_tools.records.episodes import side_files
from sokoban_tools.records.manifest import manifest_path, read_manifest
from sokoban_tools.training.checkpoint import checkpoint_path
from sokoban_tools.training.train import main as train_main
from test_bad_input_round_six import read_only_dir  # noqa: F401 (a fixture)
from test_inspect_task import convert, edited, quick_look, refused_in_one_line, require_inspect, run_inspect  # noqa: F401
from test_verl_agent_resume import CHECKPOINTS, drive, tree  # noqa: F401 (tree: a fixture)

ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
RUN = ("--method", "ppo", "--seed", "1", "--steps", "512", "--eval-every", "512")


def error_line(err: str) -> str:
    """The command's one line of error: the last line, and no traceback (a library's import
    notice on stderr aside)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and "Traceback" not in err, err
    assert sum(line.startswith("error: ") or ": error: " in line for line in lines) == 1, err
    assert lines[-1].startswith("error: ") or ": error: " in lines[-1], err
    return lines[-1]


def files_of(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() if path.is_file() else b"<not a file>" for path in folder.iterdir()
            if not path.name.endswith(".lock")}


# --- the training run's checkpoint and its log --------------------------------------------------

@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, sb3) -> Path:
    """The folder of a finished run of 512 env steps: its log, manifest and checkpoint."""
    folder = tmp_path_factory.mktemp("finished")
    done = subprocess.run([sys.executable, "-m", "sokoban_tools", "train", *RUN, "--log", str(folder / "run.jsonl"),
                           "--quiet"], env=ENV, cwd=folder, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture
def run_copy(finished_run, tmp_path) -> Path:
    """A copy of the finished run's log (its manifest and checkpoint beside it)."""
    for path in finished_run.iterdir():
        shutil.copyfile(path, tmp_path / path.name)
    return tmp_path / "run.jsonl"


def resume(log: Path, capsys, *options: str) -> tuple[int, str]:
    code = train_main([*RUN, "--log", str(log), "--quiet", *options])
    return code, capsys.readouterr().err


def refused_untouched(log: Path, capsys, *words: str) -> str:
    """The resume of ``log`` refused in one line holding ``words``, every file as it was."""
    before = files_of(log.parent)
    code, err = resume(log, capsys)
    line = error_line(err)
    assert code == 1 and all(word in line for word in words), line
    assert files_of(log.parent) == before and not side_files(log)
    return line


def flip_a_byte(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_checkpoint_with_one_byte_flipped_is_refused_naming_it_and_the_fix(run_copy, capsys):
    checkpoint = checkpoint_path(run_copy)
    flip_a_byte(checkpoint, checkpoint.stat().st_size // 2)  # in the learner's state
    refused_untouched(run_copy, capsys, str(checkpoint), "cut or altered", "move the checkpoint away")


@pytest.mark.parametrize("damage", ["cut in half", "empty", "a directory", "a FIFO"])
def test_a_checkpoint_cut_emptied_or_not_a_file_is_refused_in_one_line_without_hanging(run_copy, capsys, damage):
    checkpoint = checkpoint_path(run_copy)
    if damage == "cut in half":
        checkpoint.write_bytes(checkpoint.read_bytes()[:checkpoint.stat().st_size // 2])
        words = ("cut or altered",)
    elif damage == "empty":
        checkpoint.write_bytes(b"")
        words = ("not a training checkpoint",)
    else:
        checkpoint.unlink()
        checkpoint.mkdir() if damage == "a directory" else os.mkfifo(checkpoint)
        words = ("is not a regular file",)
    refused_untouched(run_copy, capsys, str(checkpoint), *words, "move")


def test_a_checkpoint_of_a_later_point_than_its_log_is_refused(run_copy, capsys):
    lines = run_copy.read_bytes().splitlines(keepends=True)
    run_copy.write_bytes(b"".join(lines[:256]))  # the log of pass 0 alone, beside the finished run's checkpoint
    refused_untouched(run_copy, capsys, str(run_copy), "holds 256 complete records",
                      f"written after {len(lines):,}", "put back the log")


def test_a_record_edited_before_the_checkpoint_is_refused_at_resume(run_copy, capsys):
    lines = run_copy.read_bytes().splitlines(keepends=True)
    lost = next(i for i, line in enumerate(lines) if b'"won":false' in line)
    lines[lost] = lines[lost].replace(b'"won":false', b'"won":true')
    run_copy.write_bytes(b"".join(lines))
    refused_untouched(run_copy, capsys, str(run_copy), "not those its checkpoint", "edited", "put back the log")


@pytest.mark.parametrize("damage", ["cut to 100 lines", "deleted"])
def test_a_log_cut_or_deleted_before_the_resume_is_refused_not_played_on(run_copy, capsys, damage):
    if damage == "deleted":
        run_copy.unlink()
        words = ("does not exist",)
    else:
        run_copy.write_bytes(b"".join(run_copy.read_bytes().splitlines(keepends=True)[:100]))
        words = ("holds 100 complete records",)
    refused_untouched(run_copy, capsys, str(run_copy), *words, "put back the log")
    assert damage != "deleted" or not run_copy.exists()


def test_the_temporary_file_of_a_checkpoint_write_that_was_killed_is_removed_at_the_next_start(run_copy, capsys):
    leftover = run_copy.with_name(f".{checkpoint_path(run_copy).name}.k1ll3d_x.tmp")
    leftover.write_bytes(b"\0" * 3_000_000)  # what a kill inside the checkpoint's write leaves
    log, checkpoint = run_copy.read_bytes(), checkpoint_path(run_copy).read_bytes()
    code, err = resume(run_copy, capsys)
    assert code == 0, err
    assert not leftover.exists() and f"removed {leftover.name}" in err
    assert run_copy.read_bytes() == log and checkpoint_path(run_copy).read_bytes() == checkpoint  # still finished


def test_a_verl_agent_resume_over_a_record_edited_before_its_checkpoint_is_refused(tree, tmp_path):  # noqa: F811
    """The same kind in verl-agent's resume: its checkpoint state holds the SHA-256 of the records."""
    log = "checkpoints/episodes.jsonl"
    done, edited_run = drive(tree, tmp_path, [
        {"folder": "done", "overrides": CHECKPOINTS},
        {"folder": "edited", "overrides": CHECKPOINTS,
         "prepare": [{"copy": "done"}, {"replace_once": log, "old": '"won":false', "new": '"won":true'}]}])
    assert done["exit"] == 0
    assert edited_run["exit"] == 1 and edited_run["error"].startswith("ResumedLogError: "), edited_run["error"]
    assert "are not those the run had written" in edited_run["error"] and "edited" in edited_run["error"]
    assert "trainer.resume_mode=disable" in edited_run["error"] and not edited_run["side_files"]
    assert edited_run["log"] == done["log"].replace('"won":false', '"won":true', 1)  # nothing moved


# --- the training command's faults and options ---------------------------------------------------

def test_a_seed_beyond_numpys_range_is_a_usage_error_naming_seed(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        train_main(["--method", "ppo", "--seed", str(2 ** 32), "--log", str(tmp_path / "run.jsonl")])
    line = error_line(capsys.readouterr().err)
    assert exited.value.code == 2 and "--seed must be between 0 and 4294967295" in line, line
    assert not list(tmp_path.iterdir())


def limited(limit: int):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.parametrize("limit,written", [(20_000, "the episode log"), (1_000_000, "checkpoint")],
                         ids=["in the log's append", "in the checkpoint's write"])
def test_the_file_size_limit_reached_mid_run_ends_in_one_line_naming_the_file_and_the_fix(sb3, tmp_path, limit,
                                                                                           written):
    log = tmp_path / "run.jsonl"
    done = subprocess.run([sys.executable, "-m", "sokoban_tools", "train", *RUN, "--log", str(log), "--quiet"],
                          env=ENV, cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          preexec_fn=limited(limit))
    line = error_line(done.stderr)
    assert done.returncode == 1 and str(log) in line and written in line and "free space" in line, line
    assert "run the same command" in line or "start the run again" in line, line
    assert not [path for path in tmp_path.iterdir() if path.name.endswith(".tmp")]  # none left behind


@pytest.fixture
def held_log(tmp_path):
    """A log whose lock another process holds, as a run writing it does."""
    log = tmp_path / "run.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom sokoban_tools.records.episodes import "
                               f"episode_writer\nw = episode_writer({str(log)!r})\nprint('held', flush=True)\n"
                               "sys.stdin.read()"], env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        yield log
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


@pytest.mark.parametrize("publish", [False, True], ids=["train", "train --publish"])
def test_a_second_train_on_a_log_another_process_writes_is_refused_in_one_line(sb3, held_log, tmp_path, capsys,
                                                                               publish):
    options = ("--publish", str(tmp_path / "published")) if publish else ()
    before = files_of(tmp_path)
    code, err = resume(held_log, capsys, *options)
    line = error_line(err)
    assert code == 1 and f"the episode log {held_log} is being written by another process" in line, line
    assert "give this run another log" in line and files_of(tmp_path) == before


@pytest.mark.parametrize("case", ["a file", "a read-only folder", "the log's own folder", "an older publish"])
def test_a_publish_destination_that_cannot_take_the_run_is_refused_before_training(sb3, tmp_path, capsys,
                                                                                   read_only_dir, case):  # noqa: F811
    log = tmp_path / "runs" / "ppo-1.jsonl"
    log.parent.mkdir()
    destination, words = tmp_path / "published", ()
    if case == "a file":
        destination.write_text("")
        words = ("is a file", "give --publish another path")
    elif case == "a read-only folder":
        destination, words = read_only_dir, ("cannot be written", "give --publish another path")
    elif case == "the log's own folder":
        destination, words = log.parent, ("over the run's own log", "give --publish another folder")
    else:
        destination.mkdir()
        (destination / "ppo-1.jsonl").write_text("an earlier publish\n")
        words = ("an earlier publish of ppo seed 1", "--replace")
    before = files_of(tmp_path)
    with pytest.raises(SystemExit) as exited:
        train_main([*RUN, "--log", str(log), "--publish", str(destination), "--quiet"])
    line = error_line(capsys.readouterr().err)
    assert exited.value.code == 2 and f"--publish {destination}" in line and all(w in line for w in words), line
    assert files_of(tmp_path) == before and not list(log.parent.iterdir())  # nothing trained, nothing written


def test_replace_lets_publish_write_over_an_earlier_publish_of_the_run(run_copy, tmp_path, capsys):
    published = tmp_path / "published"
    published.mkdir()
    (published / "ppo-1.jsonl").write_text("an earlier publish\n")
    code, err = resume(run_copy, capsys, "--publish", str(published), "--replace")
    assert code == 0, err
    assert (published / "ppo-1.jsonl").read_bytes() == b"".join(
        line for line in run_copy.read_bytes().splitlines(keepends=True) if b'"phase":"validation"' in line)


# --- an Inspect log that lies ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def random_look(tmp_path_factory) -> Path:
    """The Inspect log of ``--limit 3`` against the random model (the text turn): boards lost in 15 turns."""
    folder = tmp_path_factory.mktemp("random-look")
    with pytest.MonkeyPatch.context() as monkeypatch:
        require_inspect(monkeypatch)
        from sokoban_tools.integrations.served.demo_model import LoopbackServer, Script

        with LoopbackServer(Script("random", keep=False)) as server:
            return run_inspect(server.base_url, folder / "logs", "tiny_rgb_array", limit=3)


def episode_of(sample) -> dict:
    return sample.store["sokoban_fairness_episode"]


def lost_sample(log):
    return next(sample for sample in log.samples if not episode_of(sample)["won"])


def refused_unwritten(capsys, inspect_log: Path, out: Path, *words: str) -> None:
    code, _, err = convert(capsys, inspect_log, out)
    refused_in_one_line(code, err, *words)
    assert not out.exists() and not manifest_path(out).exists()


def test_moves_changed_so_that_they_still_replay_are_refused_as_not_the_models_answers(random_look, tmp_path,
                                                                                        capsys):
    from sokoban_tools.evaluation.replay import check_record
    from sokoban_tools.records.episodes import EpisodeRecord
    from sokoban_tools.records.tasks import load_validation

    boards = {row.task_id: row.board for row in load_validation(REPO / "fairness" / "evaluation.jsonl")}

    def change(log):
        episode = episode_of(lost_sample(log))
        values = {key: value for key, value in episode.items() if key != "stratum"}
        values["episode_return"] = values.pop("return")
        for turn, letter in enumerate(episode["moves"]):  # a move changed, the record still replaying
            for other in "UDLR".replace(letter, "") if letter != "0" else ():
                moves = episode["moves"][:turn] + other + episode["moves"][turn + 1:]
                if check_record(EpisodeRecord(**{**values, "moves": moves}), boards[episode["task_id"]]) is None:
                    episode["moves"] = moves
                    return
        pytest.fail("no one-move change of the lost episode replays")

    refused_unwritten(capsys, edited(random_look, tmp_path, change), tmp_path / "out.jsonl",
                      "are not the model's answers", "recorded", "answered")


def test_a_lost_episode_rewritten_as_a_win_on_turn_15_is_refused(random_look, tmp_path, capsys):
    from sokoban_tools.evaluation.replay import replay
    from sokoban_tools.records.tasks import load_validation

    rows = {row.task_id: row for row in load_validation(REPO / "fairness" / "evaluation.jsonl")}

    def change(log):
        sample = lost_sample(log)
        episode = episode_of(sample)
        assert len(episode["moves"]) == 15
        row = rows[episode["task_id"]]
        moves = "0" * (15 - row.shortest_solution_length) + row.shortest_solution.upper()  # no-ops, then a solution
        played = replay(row.board, moves)
        assert played.won and not played.problem
        episode.update(moves=moves, won=True, actions=played.actions, **{"return": played.episode_return})
        next(iter(sample.scores.values())).value = "C"  # the score too

    refused_unwritten(capsys, edited(random_look, tmp_path, change), tmp_path / "out.jsonl",
                      "are not the model's answers")


def test_samples_without_model_events_are_refused_as_no_request_a_turn(quick_look, tmp_path, capsys):  # noqa: F811
    def change(log):
        for sample in log.samples:
            sample.events = [event for event in sample.events if event.event != "model"]

    refused_unwritten(capsys, edited(quick_look, tmp_path, change), tmp_path / "out.jsonl",
                      "0 model requests", "not one request a turn")


def test_records_claiming_the_1000_board_pools_digest_are_refused_before_writing(quick_look, tmp_path,
                                                                                 capsys):  # noqa: F811
    from sokoban_published import PUBLISHED_FILES

    pool = PUBLISHED_FILES[SOURCE_POOL_DATA]["sha256"]

    def change(log):
        for sample in log.samples:
            episode_of(sample)["evaluation_sha256"] = pool

    refused_unwritten(capsys, edited(quick_look, tmp_path, change), tmp_path / "out.jsonl", pool,
                      "the log was edited")


# --- the model-page file: leaderboard --eval-results ------------------------------------------------

@pytest.mark.parametrize("name,words", [("", ("--eval-results: entry name \"\"",)),
                                        ("../results/smollm2-135m-text", ("../results",)),
                                        (f"{REAL_MODEL_ENTRY}/", (f"{REAL_MODEL_ENTRY}/",))],
                         ids=["empty", "with ../", "a trailing slash"])
def test_an_eval_results_name_is_checked_as_an_entry_name(tmp_path, capsys, name, words):
    with pytest.raises(SystemExit) as exited:
        leaderboard.main([str(RESULTS_DIR), "--eval-results", name, "--out", str(tmp_path / "out")])
    line = error_line(capsys.readouterr().err)
    assert exited.value.code == 2 and all(word in line for word in words) and "lower-case letters" in line, line
    assert not (tmp_path / "out").exists()


def test_a_model_id_with_a_newline_cannot_forge_a_second_result(tmp_path, capsys):
    results = tmp_path / "results"
    shutil.copytree(RESULTS_DIR / REAL_MODEL_ENTRY, results / REAL_MODEL_ENTRY)
    info_path = results / REAL_MODEL_ENTRY / ENTRY
    info = json.loads(info_path.read_text(encoding="utf-8"))
    forged = (f"{info['model']}\n- dataset:\n    id: x/y\n    task_id: text\n  value: 100.0\n"
              f"  source:\n    url: \"https://example.org/someone/else\"\n#")
    # the writer: every value a scalar on its own line, so the file holds one result whatever the model
    (result,) = yaml.safe_load(eval_results(REAL_MODEL_ENTRY, {**info, "model": forged}, read_manifest(
        results / REAL_MODEL_ENTRY / leaderboard.MANIFEST), 1, 256))
    assert result["value"] == 100 / 256
    for breaker in ("\u2028", "\u0085"):  # what YAML, not JSON, reads as a line break
        assert len(yaml.safe_load(eval_results(REAL_MODEL_ENTRY, {**info, "model": forged.replace("\n", breaker)},
                                               read_manifest(results / REAL_MODEL_ENTRY /
                                                                         leaderboard.MANIFEST), 1, 256))) == 1
    # the command: a model that is not a Hub id is refused
    info["model"] = forged
    info_path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    code = leaderboard.main([str(results), "--eval-results", REAL_MODEL_ENTRY, "--out", str(tmp_path / "out")])
    line = error_line(capsys.readouterr().err)
    assert code == 1 and "is not a Hub model id" in line and "\\n" in line, line
    assert not (tmp_path / "out").exists()


def test_eval_results_with_add_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        leaderboard.main([str(tmp_path / "results"), "--eval-results", REAL_MODEL_ENTRY, "--add", "mine", "--log",
                          str(tmp_path / "run.jsonl")])
    line = error_line(capsys.readouterr().err)
    assert exited.value.code == 2 and "--add, --log" in line and "--eval-results" in line, line
    assert not list(tmp_path.iterdir())


def test_an_empty_add_name_is_refused_not_read_as_no_add(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        leaderboard.main([str(RESULTS_DIR), "--add", "", "--log", str(tmp_path / "run.jsonl")])
    line = error_line(capsys.readouterr().err)
    assert exited.value.code == 2 and "--add: entry name \"\"" in line, line


def test_eval_results_into_a_folder_that_cannot_be_written_is_refused_in_one_line(tmp_path, capsys,
                                                                                  read_only_dir):  # noqa: F811
    code = leaderboard.main([str(RESULTS_DIR), "--eval-results", REAL_MODEL_ENTRY, "--out", str(read_only_dir)])
    line = error_line(capsys.readouterr().err)
    assert code == 1 and f"{read_only_dir}: cannot be written" in line and "give --out another path" in line, line
