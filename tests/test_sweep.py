"""`python -m sokoban_tools sweep`: the training page's sweep of ten seeds, on a local Ray that the test
starts, is killed mid-way (its whole process group), started again, and finishes with every log whole
and equal, byte for byte, to the same run made unbroken by `train`; on its own Ray it starts and stops
one; malformed --seeds are usage errors. No Ray process or run outlives a test.

Ray is a test dependency (``pip install -e '.[test]'``); without it the Ray tests skip, except under
CI=true, where they fail.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import REPO
from unavailable import unavailable

from sokoban_tools.__main__ import main, run
from sokoban_tools.records.episodes import side_files
from sokoban_tools.records.manifest import manifest_path, read_manifest
from sokoban_tools.training.sweep import parse_seeds
from sokoban_tools.training.train import METHODS

TIMEOUT = 900  # seconds for any one wait: generous, for a busy machine


def page_command() -> str:
    """The sweep command of docs/training.md's sweep section, as a user copies it."""
    page = (REPO / "docs" / "training.md").read_text(encoding="utf-8")
    section = page.split("\n## Sweeps", 1)[1].split("\n## ", 1)[0]
    [command] = (block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S))
    return command


def option(command: str, name: str) -> str:
    words = shlex.split(command)
    return words[words.index(name) + 1]


def environment(ray_dir: str, **extra: str) -> dict:
    """The user's environment: this Python first on PATH, this checkout importable, Ray's files private."""
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    env.update(PATH=os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")]),
               PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1", RAY_TMPDIR=ray_dir, **extra)
    return env


def processes_naming(text: str) -> list[int]:
    """The processes (not this one) whose command line or environment holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if any(text.encode() in (entry / part).read_bytes() for part in ("cmdline", "environ")):
                    found.append(int(entry.name))
            except OSError:  # gone, or not ours
                continue
    return found


def wait_for(predicate, what: str) -> None:
    ends = time.monotonic() + TIMEOUT
    while not predicate():
        if time.monotonic() > ends:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture
def ray_dir():
    """A private folder for Ray's files (short: Ray's socket paths are limited), so that no other Ray user
    on this machine meets the test's Ray; on the way out, every process that used it must be gone."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc to find left-over processes")
    try:
        import ray  # noqa: F401
    except ImportError as err:
        unavailable(f"ray is not installed ({err}); pip install -e '.[test]'")
    private = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    try:
        yield private
        wait_for(lambda: not processes_naming(private), "every Ray process and run of the test to end")
    finally:
        for pid in processes_naming(private):  # only after a failure: the test's own processes, by id
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(private, ignore_errors=True)


@pytest.fixture
def local_ray(ray_dir):
    """A local Ray of two CPUs, started by the test (its address, its folder); shut down at the end."""
    import ray

    previous = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = ray_dir
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        yield ray.get_runtime_context().gcs_address, ray_dir
    finally:
        ray.shutdown()
        if previous is None:
            del os.environ["RAY_TMPDIR"]
        else:
            os.environ["RAY_TMPDIR"] = previous


def finished(log: Path) -> bool:
    """The run has reached its budget: train has written its costs (the manifest is written whole, by rename)."""
    manifest = manifest_path(log)
    return manifest.exists() and "training_env_steps" in read_manifest(manifest)["costs"]


def checkpointed(log: Path) -> bool:
    return log.with_name(log.name + ".checkpoint").exists()


@pytest.mark.slow
def test_the_pages_sweep_killed_mid_way_and_started_again_finishes_every_log_as_if_never_stopped(
        sb3, local_ray, tmp_path):
    address, ray_dir = local_ray
    command = page_command()
    method, seeds = option(command, "--method"), parse_seeds(option(command, "--seeds"))
    assert len(seeds) == 10
    folder = tmp_path / option(command, "--logs")
    logs = {seed: folder / f"{method}-{seed}.jsonl" for seed in seeds}
    output = tmp_path / "first-sweep.out"
    with open(output, "w") as out:
        sweep = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, env=environment(ray_dir, RAY_ADDRESS=address),
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: sweep.poll() is not None or (
            any(finished(log) for log in logs.values())
            and any(checkpointed(log) and not finished(log) for log in logs.values())),
            "a finished run and a run under way")
    finally:
        os.killpg(sweep.pid, signal.SIGKILL)  # the sweep and anything in its group
        sweep.wait()
    assert sweep.returncode == -signal.SIGKILL, output.read_text()  # killed, not finished
    # its runs' train processes die with their Ray workers, which Ray ends with their dead driver
    wait_for(lambda: not processes_naming(str(folder)), "the killed sweep's runs to end")
    done = [seed for seed, log in logs.items() if finished(log)]
    under_way = [seed for seed, log in logs.items() if checkpointed(log) and not finished(log)]
    # a run killed before its first checkpoint starts again from nothing
    unsaved = [seed for seed, log in logs.items() if log.exists() and not checkpointed(log)]
    assert done and under_way and len(done) < len(seeds)
    before = {seed: logs[seed].read_bytes() for seed in done}

    whole = tmp_path / "whole"  # the runs that were killed, made again unbroken by train
    options = ["--steps", option(command, "--steps"), "--eval-every", option(command, "--eval-every"), "--quiet"]
    unbroken = {seed: subprocess.Popen(
        [sys.executable, "-m", "sokoban_tools", "train", "--method", method, "--seed", str(seed),
         "--log", str(whole / logs[seed].name), *options], cwd=tmp_path, env=environment(ray_dir),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for seed in under_way + unsaved}
    started = time.monotonic()
    again = subprocess.run(["bash", "-c", f"{command} --address {address}"], cwd=tmp_path, env=environment(ray_dir),
                           capture_output=True, text=True, timeout=TIMEOUT)
    print(f"the restarted sweep: {time.monotonic() - started:.1f} s\n{again.stdout}")
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    lines = again.stdout.splitlines()
    for seed in seeds:
        label = f"{METHODS[method]} seed {seed}: "
        said = [line.removeprefix(label) for line in lines if line.startswith(label)]
        if seed in done:
            assert len(said) == 1 and said[0].startswith("finished before") and said[0].endswith("skipped"), said
            assert logs[seed].read_bytes() == before[seed]  # left as it was
            continue
        assert said[0] == ("resumed from its checkpoint" if seed in under_way else "started again (stopped "
                           "before its first checkpoint: its log is set aside)" if seed in unsaved else "started"), said
        # a line per validation pass still to play (a run killed after its last pass has none), then the end
        assert all(line.startswith("validation at ") for line in said[1:-1]), said
        assert len(said) >= (2 if seed in under_way else 3), said
        assert re.fullmatch(r"finished \(\d+\.\d CPU-seconds, \d+\.\d s wall in this sweep\)", said[-1]), said
    for seed in under_way + unsaved:
        assert unbroken[seed].wait(timeout=TIMEOUT) == 0, unbroken[seed].stderr.read().decode()
        assert logs[seed].read_bytes() == (whole / logs[seed].name).read_bytes(), seed  # no record lost or doubled
        reasons = [reason for _, _, reason in side_files(logs[seed])]  # what was set aside, and why
        assert all(reason.startswith("resume-from-") if seed in under_way else reason == "restart"
                   for reason in reasons), reasons
    for log in logs.values():
        assert finished(log)
        assert run("score", [str(log)]) == 0, log  # `python -m sokoban_tools score LOG`


@pytest.mark.slow
def test_a_sweep_without_an_address_starts_a_ray_on_the_cores_it_may_use_and_stops_it_and_started_again_skips(sb3, ray_dir, tmp_path):
    command = ["python", "-m", "sokoban_tools", "sweep", "--method", "grpo", "--seeds", "3", "--steps", "1",
               "--eval-every", "1", "--logs", "runs", "--publish", "published"]
    done = subprocess.run(command, cwd=tmp_path, env=environment(ray_dir), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "Started a local Ray instance" in done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("GRPO seed 3: ")]
    assert lines[0] == "GRPO seed 3: started" and lines[-1].startswith("GRPO seed 3: finished (") and len(lines) == 4
    published = (tmp_path / "published" / "grpo-3.jsonl").read_bytes()
    # its Ray is gone with it (the fixture waits for the rest, in case Ray ends its workers late)
    again = subprocess.run(command, cwd=tmp_path, env=environment(ray_dir), capture_output=True, text=True,
                           timeout=TIMEOUT)
    assert again.returncode == 0 and "Ray" not in again.stderr, again.stderr  # nothing to run: no Ray started
    assert re.match(r"GRPO seed 3: finished before \(\d+\.\d CPU-seconds in its manifest\): skipped\n", again.stdout)
    assert run("score", [str(tmp_path / "runs" / "grpo-3.jsonl")]) == 0
    assert (tmp_path / "published" / "grpo-3.jsonl").read_bytes() == published  # its publish, not refused as another


@pytest.mark.parametrize("seeds, problem", [
    ("9-0", "'9-0': the range 9-0 runs backwards; write 0-9"),
    ("0-3,2", "'0-3,2': seed 2 is given twice; give each seed once"),
    ("a", "'a': 'a' is not a seed (0 or more) or a range of them (A-B)"),
    ("", "'': '' is not a seed"),
    ("1,,2", "'1,,2': '' is not a seed"),
    ("-1", "'-1': '-1' is not a seed"),
    ("1-", "'1-': '1-' is not a seed"),
    ("0-2-4", "'0-2-4': '0-2-4' is not a seed"),
])
def test_malformed_seeds_are_a_usage_error_naming_seeds_before_anything_is_written(seeds, problem, tmp_path,
                                                                                     capsys):
    logs = tmp_path / "runs"
    assert main(["sweep", "--method", "grpo", "--seeds", seeds, "--logs", str(logs)]) == 2
    err = capsys.readouterr().err
    assert f"sweep: error: argument --seeds: {problem}" in err, err
    assert not logs.exists()


def test_seeds_are_ranges_lists_or_both_in_the_order_given():
    assert parse_seeds("0-9") == list(range(10))
    assert parse_seeds("0,2,5") == [0, 2, 5]
    assert parse_seeds("7, 0-2") == [7, 0, 1, 2]
    assert parse_seeds("4-4") == [4]


def test_without_ray_the_sweep_says_how_to_install_it_before_anything_is_written(monkeypatch, capsys, tmp_path):
    from sokoban_tools.extras import install_advice
    from sokoban_tools.training.sweep import RAY_MISSING

    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    logs = tmp_path / "runs"
    assert main(["sweep", "--method", "ppo", "--seeds", "0-1", "--logs", str(logs)]) == 1
    assert capsys.readouterr().err == f"error: {RAY_MISSING}\n" and install_advice("sweep") in RAY_MISSING
    assert not logs.exists()
