"""Bad input and faults on the surfaces added last (issue 41), each refused in one line or a
usage error naming the input and the fix, with nothing written, moved or deleted that the user
did not ask for: the quick start, the demo model, the text turn's answers, GEM, the results
table and its --add, the replay of an episode's end, and compare's options."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from answering_server import AnsweringServer
from conftest import REPO
from sokoban_tools.evaluation import compare, leaderboard
from sokoban_tools.evaluation.leaderboard import ENTRY, LOG, MANIFEST, add_entry
from sokoban_tools.evaluation.replay import check_record, replay, verify_log
from sokoban_tools.integrations.served import demo_model, quickstart
from sokoban_tools.paths import unwritable
from sokoban_tools.records.episodes import lock_path, read_episodes
from sokoban_tools.records.manifest import manifest_path
from sokoban_tools.records.rows import DataError
from sokoban_tools.records.tasks import load_validation
from test_manifest import example_settings, run_log
from unavailable import unavailable

RESULTS = REPO / "results"
RANDOM = RESULTS / "random-policy"


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def copy_of_log(entry: Path, log: Path) -> Path:
    """``entry``'s episode log and manifest copied to ``log`` (a user's evaluation)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(entry / LOG, log)
    shutil.copyfile(entry / MANIFEST, manifest_path(log))
    return log


# --- the quick start ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["another model's evaluation", "records without a manifest"])
def test_quickstart_refuses_a_log_that_is_not_its_own_and_deletes_nothing(tmp_path, capsys, kind):
    log = copy_of_log(RESULTS / "smollm2-135m-text", tmp_path / "runs" / "other.jsonl")
    if kind == "records without a manifest":
        manifest_path(log).unlink()
    before = {path.name: path.read_bytes() for path in log.parent.iterdir()}
    assert quickstart.main(["--log", str(log)]) == 1
    out, err = capsys.readouterr()
    line = one_error_line(err)
    assert f"--log {log}" in line and "another --log" in line and "demo-model" not in out  # nothing played
    after = {path.name: path.read_bytes() for path in log.parent.iterdir() if not path.name.endswith(".lock")}
    assert after == before


def test_quickstart_with_a_lock_that_is_a_directory_says_so_in_one_line(tmp_path, capsys):
    log = tmp_path / "runs" / "quickstart" / "demo-model.jsonl"
    lock_path(log).mkdir(parents=True)
    assert quickstart.main(["--log", str(log)]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"the lock {lock_path(log)}" in line and "is a directory" in line and "move it away" in line
    assert sorted(path.name for path in log.parent.iterdir()) == [lock_path(log).name]


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory this process cannot create files in; as root (who writes through mode bits)
    /sys, where the kernel refuses new files to everyone."""
    if os.geteuid() == 0:
        yield Path("/sys")
        return
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


def test_the_advice_for_a_path_that_cannot_be_written_names_the_commands_own_option(tmp_path, capsys,
                                                                                    read_only_dir):
    a_file = tmp_path / "runs"
    a_file.write_text("")
    for argv in (["--log", str(a_file / "quick.jsonl")], ["--log", str(read_only_dir / "quick.jsonl")]):
        with pytest.raises(SystemExit):
            quickstart.main(argv)
        err = capsys.readouterr().err
        assert "--data-dir" not in err and "give --log another path" in err, err
    log = run_log(tmp_path, "a", "CPAD", example_settings())
    assert compare.main(["--a", str(log), "--b", str(log), "--plot", str(read_only_dir / "curves.png")]) == 1
    line = one_error_line(capsys.readouterr().err)
    assert "--data-dir" not in line and "give --plot another path" in line
    for where in (a_file / "episodes.jsonl", read_only_dir / "episodes.jsonl"):  # GEM's episode_log, unnamed
        assert "--data-dir" not in unwritable(where) and "give another path" in unwritable(where)


def test_compare_plot_with_a_name_too_long_for_its_folder_is_refused_in_one_line(tmp_path, capsys):
    log = run_log(tmp_path, "a", "CPAD", example_settings())
    for length in (300, 250):  # over the file system's 255 bytes; within it, but not with the temporary's name
        plot = tmp_path / ("c" * length + ".png")
        assert compare.main(["--a", str(log), "--b", str(log), "--plot", str(plot)]) == 1
        line = one_error_line(capsys.readouterr().err)
        assert line.startswith(f"error: --plot {plot}") and "give --plot another path" in line
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.jsonl", "a.jsonl.manifest.json"]


# --- the demo model ----------------------------------------------------------------------------

@pytest.mark.parametrize("port", ["-1", "65536", str(10 ** 12), "eighty"])
def test_demo_model_port_out_of_range_is_a_usage_error(capsys, port):
    with pytest.raises(SystemExit) as stop:
        demo_model.main(["--port", port])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --port: the port" in err and "0 to 65535" in err and "Traceback" not in err
    with pytest.raises(ValueError, match="0 to 65535"):
        demo_model.LoopbackServer(demo_model.Script(), int(port) if port.lstrip("-").isdigit() else port)


def test_demo_model_stops_cleanly_on_ctrl_c_the_moment_it_says_it_is_serving():
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI")}
    for attempt in range(8):  # the signal lands at a different point of the banner's lines each time
        process = subprocess.Popen([sys.executable, "-m", "sokoban_tools", "demo-model", "--port", "0"], cwd=REPO,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            first = process.stdout.readline()
            assert "serving at" in first, first + process.stderr.read()
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        assert process.returncode == 0 and "Traceback" not in err and err == "", (attempt, err)
        assert "demo model stopped after 0 requests" in out


# --- evaluate --mode tiny_rgb_array: what a server answers --------------------------------------

class BodyServer(AnsweringServer):
    """A server listing the demo model and answering every chat completion with ``body``."""

    def __init__(self, body: bytes):
        self.body = body
        super().__init__()

    def answer_get(self, handler) -> None:
        handler.send(json.dumps({"object": "list", "data": [{"id": demo_model.DEMO_MODEL}]}).encode())

    def answer_post(self, handler) -> None:
        handler.send(self.body)


def completion(content) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}).encode()


def evaluate_text_turn(capsys, body: bytes, log: Path) -> tuple[int, str]:
    try:
        import openai  # noqa: F401
    except ImportError:
        unavailable("the openai package (the evaluate extra) is not installed")
    from sokoban_tools.integrations.served.evaluate import main

    with BodyServer(body) as server:
        code = main(["--base-url", server.url, "--model", demo_model.DEMO_MODEL, "--log", str(log), "--mode",
                     "tiny_rgb_array", "--boards", "3", "--concurrency", "1", "--backoff", "0.01"])
    return code, capsys.readouterr().err


def test_evaluate_reads_an_answer_sent_as_a_list_of_text_parts(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    log = tmp_path / "parts.jsonl"
    code, err = evaluate_text_turn(capsys, completion([{"type": "text", "text": "<action>right</action>"}]), log)
    assert code == 0, err
    assert all(set(record.moves) <= set("R") and record.moves for record in read_episodes(log)), \
        [record.moves for record in read_episodes(log)]


@pytest.mark.parametrize("body, words", [
    (completion("<action>right</action>").replace(b"right", b"r\xe9ght"), ["not UTF-8", "byte "]),
    (completion("<action>right</action>" + "x" * (20 << 20)), ["over 16 MiB", "too large"]),
    (completion({"action": "right"}), ["neither text nor a list of text parts"]),
])
def test_evaluate_stops_on_an_answer_it_cannot_read_instead_of_logging_losses(tmp_path, capsys, monkeypatch,
                                                                             body, words):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    log = tmp_path / "odd.jsonl"
    code, err = evaluate_text_turn(capsys, body, log)
    line = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 1 and len(line) == 1 and "Traceback" not in err, err
    assert all(word in line[0] for word in words) and "not a completion" not in line[0], line[0]
    assert not log.exists() or read_episodes(log) == []  # no board logged as lost


# --- GEM -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gem():
    try:
        import gem
    except ImportError:
        unavailable("gem-llm is not installed; as .ci/run does: pip install --no-deps 'gem-llm==0.1.0' && pip "
                    "install 'reasoning-gym==0.1.23' 'nltk==3.9.1' 'msgspec==0.19.0'")
    import sokoban_tools.integrations.gem_env  # noqa: F401  registers the environments
    return gem


VALIDATION = "sokoban-fairness:validation"


def test_gem_reset_refuses_a_bool_seed(gem):
    env = gem.make(VALIDATION)
    for seed in (True, False):
        with pytest.raises(TypeError, match="seed .* must be a non-negative integer, got (True|False)"):
            env.reset(seed=seed)
    env.close()


@pytest.mark.parametrize("shard_count", [0, -2, "4", 2.0])
def test_gem_a_bad_shard_count_is_named_as_the_shard_count(gem, shard_count):
    with pytest.raises(ValueError, match=rf"^shard_count .* must be a positive integer, got {shard_count!r}$"):
        gem.make(VALIDATION, shard_count=shard_count)


def test_gem_a_logged_vector_not_built_from_seed_zero_is_refused_before_it_writes(gem, tmp_path):
    log = tmp_path / "runs" / "gem.jsonl"
    with pytest.raises(ValueError, match="seed 1 would be the first environment to write .*make_vec's default seed=0"):
        gem.make_vec([VALIDATION] * 4, shard_count=4, seed=1, episode_log=str(log))
    assert not log.parent.exists() or list(log.parent.iterdir()) == []  # no manifest, no lock
    envs = gem.make_vec([VALIDATION] * 4, shard_count=4, episode_log=str(log))  # the fix works at once
    assert manifest_path(log).is_file()
    for env in envs.envs:
        env.close()


# --- the results table and --add ------------------------------------------------------------------

@pytest.fixture
def results(tmp_path) -> Path:
    """A results folder holding a copy of two committed entries."""
    folder = tmp_path / "results"
    for name in ("random-policy", "optimal"):
        shutil.copytree(RESULTS / name, folder / name)
    return folder


def ranked_and_refused(results: Path, capsys) -> tuple[list[str], dict[str, str], str]:
    report = leaderboard.leaderboard(results)
    assert leaderboard.main([str(results)]) == (1 if report["refused"] else 0)
    out = capsys.readouterr().out
    return ([row["entry"] for row in report["entries"]], {r["entry"]: r["reason"] for r in report["refused"]}, out)


def test_leaderboard_refuses_entries_and_entry_files_that_are_symbolic_links(results, tmp_path, capsys):
    (results / "linked-entry").symlink_to(results / "optimal", target_is_directory=True)
    outside = tmp_path / "elsewhere"
    shutil.copytree(RANDOM, outside)
    shutil.copytree(RANDOM, results / "linked-files")
    for name in (LOG, MANIFEST):
        (results / "linked-files" / name).unlink()
        (results / "linked-files" / name).symlink_to(outside / name)
    ranked, refused, _ = ranked_and_refused(results, capsys)
    assert ranked == ["optimal", "random-policy"]
    assert "is a symbolic link" in refused["linked-entry"] and "is a symbolic link" in refused["linked-files"]


def test_leaderboard_refuses_a_folder_name_add_would_refuse_and_a_newline_forges_no_line(results, capsys):
    shutil.copytree(results / "optimal", results / "Fancy-Name")
    forged = "x\nREFUSED optimal: forged"
    shutil.copytree(results / "optimal", results / forged)
    ranked, refused, out = ranked_and_refused(results, capsys)
    assert ranked == ["optimal", "random-policy"]
    assert "entry name" in refused["Fancy-Name"] and "rename the folder" in refused["Fancy-Name"]
    assert [line for line in out.splitlines() if line.startswith("REFUSED")] == [
        f"REFUSED \"Fancy-Name\": {refused['Fancy-Name']}",
        f"REFUSED {json.dumps(forged)}: {refused[forged]}"]


def test_leaderboard_ranks_the_same_episodes_once_whatever_their_labels(results, capsys):
    copy = results / "random-copy"
    shutil.copytree(results / "random-policy", copy)
    info = json.loads((copy / ENTRY).read_text())
    info.update(model="someone/else", method="my method", submitted_by="someone else", date="2030-01-01")
    (copy / ENTRY).write_text(json.dumps(info))
    ranked, refused, _ = ranked_and_refused(results, capsys)
    assert ranked == ["optimal", "random-policy"]
    assert "same episodes as the entry random-policy" in refused["random-copy"]


def test_add_of_a_pass_entered_already_is_refused_and_writes_nothing(results):
    before = sorted(path.name for path in results.iterdir())
    with pytest.raises(DataError, match="same episodes as the entry random-policy"):
        add_entry(results, "random-again", RANDOM / LOG, "none", "someone", "https://example.org", "2030-01-01")
    assert sorted(path.name for path in results.iterdir()) == before


def test_add_names_the_users_own_log_and_line_of_a_record_refused_on_replay(tmp_path):
    lines = (RANDOM / LOG).read_text().splitlines(keepends=True)
    training = [json.dumps({**json.loads(line), "phase": "training", "evaluation_sha256": None},
                           separators=(",", ":")) + "\n" for line in lines[:3]]
    lost = next(i for i, line in enumerate(lines) if '"won":false' in line)
    lines[lost] = lines[lost].replace('"won":false', '"won":true')
    log = tmp_path / "mine.jsonl"
    log.write_text("".join(training + lines))
    shutil.copyfile(RANDOM / MANIFEST, manifest_path(log))
    results = tmp_path / "results"
    with pytest.raises(DataError) as refused:
        add_entry(results, "mine", log, "none", "someone", "https://example.org", "2030-01-01")
    assert str(refused.value).startswith(f"{log}:{len(training) + lost + 1}: the record says won=true")
    assert ".staging-" not in str(refused.value)
    assert not results.exists() or list(results.iterdir()) == []


# --- replay: an episode's end --------------------------------------------------------------------

def cut_short(record, board, moves: str):
    played = replay(board, moves, 15)
    return replace(record, moves=moves, actions=played.actions, episode_return=played.episode_return)


@pytest.mark.parametrize("kept", [4, 5, 0])
def test_replay_refuses_a_lost_record_whose_moves_stop_before_the_horizon(tmp_path, kept):
    boards = {row.task_id: row.board for row in load_validation()}
    records = read_episodes(RANDOM / LOG)
    index = next(i for i, record in enumerate(records) if not record.won)
    records[index] = cut_short(records[index], boards[records[index].task_id], records[index].moves[:kept])
    assert check_record(records[index], boards[records[index].task_id]) is not None
    # another stack's turn limit (VAGEN: several actions a turn, a turn without a move leaves none) ends otherwise
    assert check_record(records[index], boards[records[index].task_id], check_return=False) is None
    log = tmp_path / "forged.jsonl"
    log.write_text("".join(record.to_line() + "\n" for record in records))
    shutil.copyfile(RANDOM / MANIFEST, manifest_path(log))
    with pytest.raises(DataError, match=rf"forged\.jsonl:{index + 1}: the record is of an episode that did not end"):
        verify_log(log)


def test_every_committed_log_still_replays_with_the_episode_end_rule():
    logs = sorted(RESULTS.glob(f"*/{LOG}")) + sorted((REPO / "examples" / "episodes").glob("*.jsonl"))
    assert len(logs) >= 6
    for log in logs:
        assert verify_log(log).verified == len(read_episodes(log))


# --- compare's options ---------------------------------------------------------------------------

def test_compare_allow_difference_trims_the_keys_of_a_comma_and_space_list(tmp_path, capsys):
    a = run_log(tmp_path, "a", "CPAD", example_settings())
    b = run_log(tmp_path, "b", "GRPO", example_settings(**{"initial_weights.model": "other/model",
                                                           "decoding.validation.temperature": 0.7}))
    assert compare.main(["--a", str(a), "--b", str(b), "--allow-difference",
                         "initial_weights.model, decoding.validation.temperature"]) == 0, capsys.readouterr().err
