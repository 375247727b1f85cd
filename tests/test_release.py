"""Published data is frozen: a changed data file needs --new-release and a changelog entry."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import sokoban_fairness
from conftest import REPO
from sokoban_tools import __main__ as reproduce_command
from sokoban_tools.pipeline import artifacts, release
from sokoban_tools.pipeline.publish import card
from sokoban_tools.pipeline.release import (Release, ReleaseError, changelog_versions, pinned_release,
                                            release_to_pin)

TRAIN = "fairness/train.jsonl"
VALIDATION = "fairness/evaluation.jsonl"
TEMPLATE = "sokoban_tools/pipeline/publish/card_templates/README.md"
NEW_ENTRY = "- **1.1.0** — the training pool loses its last board.\n"


def changelog_with(entry: str) -> str:
    """The card template with ``entry`` as the newest changelog line."""
    text = (REPO / TEMPLATE).read_text(encoding="utf-8")
    first = text.index("- **", text.index("\n## Changelog\n"))
    return text[:first] + entry + text[first:]


@pytest.fixture
def clone(tmp_path):
    """A copy of what the card command reads and writes, with one board fewer in
    train.jsonl: what a changed generator would leave before the card step."""
    root = tmp_path / "clone"
    for name in ("sokoban_tools", "fairness", "examples", "images", "docs", "results"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "sokoban_fairness.py", "sokoban_pins.py", "sokoban_published.py", "sokoban_render.py",
                 "README.md", "BENCHMARKS.md"):
        shutil.copyfile(REPO / name, root / name)
    train = root / TRAIN
    train.write_bytes(b"".join(train.read_bytes().splitlines(keepends=True)[:-1]))
    # A release that changes the training pool retires the runs trained on the old one and their entries:
    # their manifests pin its digest, and the card refuses them by name. This copy's maintainer removed them.
    shutil.rmtree(root / "examples" / "training")
    for entry in (root / "results").iterdir():
        settings = json.loads((entry / "episodes.jsonl.manifest.json").read_text(encoding="utf-8"))
        if settings["data_sha256"].get(TRAIN) is not None:
            shutil.rmtree(entry)
    return root


def run_card(root, *args):
    """``python -m sokoban_tools card`` of the copy (it runs from its own folder)."""
    return subprocess.run([sys.executable, "-m", "sokoban_tools", "card", *args], cwd=root,
                          capture_output=True, text=True, timeout=300)


def test_card__refuses_a_changed_data_file_naming_it_both_digests_and_the_fix(clone):
    script = (clone / "sokoban_fairness.py").read_bytes()
    done = run_card(clone)
    new_digest = hashlib.sha256((clone / TRAIN).read_bytes()).hexdigest()
    assert done.returncode == 1, done.stdout + done.stderr
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1 and message.startswith("error: ") and "Traceback" not in message
    for part in (TRAIN, sokoban_fairness.PUBLISHED_FILES[TRAIN]["sha256"], new_digest, "5,000 -> 4,999 rows",
                 "python -m sokoban_tools reproduce --new-release", "## Changelog", str(clone / TEMPLATE)):
        assert part in message, part
    assert (clone / "sokoban_fairness.py").read_bytes() == script  # nothing re-pinned


def test_card__new_release_without_a_changelog_entry_is_refused(clone):
    done = run_card(clone, "--new-release")
    assert done.returncode == 1
    assert "has no changelog entry for the new release" in done.stderr and TRAIN in done.stderr


@pytest.mark.slow
def test_card__new_release_with_its_changelog_entry_pins_the_new_digest_and_version(clone):
    (clone / TEMPLATE).write_text(changelog_with(NEW_ENTRY), encoding="utf-8")
    done = run_card(clone, "--new-release")
    assert done.returncode == 0, done.stderr
    data = (clone / TRAIN).read_bytes()
    pins = (clone / "sokoban_pins.py").read_text(encoding="utf-8")
    assert 'RELEASE = "1.1.0"' in pins
    assert f'"{TRAIN}": {{"sha256": "{hashlib.sha256(data).hexdigest()}", "rows": 4999, "bytes": {len(data)}}}' in pins
    assert NEW_ENTRY.strip() in (clone / "README.md").read_text(encoding="utf-8")
    # Once released, the same files pass without the flag, and the flag has nothing left to release.
    assert run_card(clone, "--check").returncode == 0
    again = run_card(clone, "--new-release")
    assert again.returncode == 1 and "nothing to release" in again.stderr


def test_card__a_changelog_entry_without_new_data_is_refused(clone):
    (clone / TRAIN).write_bytes((REPO / TRAIN).read_bytes())
    (clone / TEMPLATE).write_text(changelog_with(NEW_ENTRY), encoding="utf-8")
    done = run_card(clone)
    assert done.returncode == 1
    assert "newest changelog entry is 1.1.0, but sokoban_pins.py pins release 1.0.0" in done.stderr


@pytest.fixture
def repinned(tmp_path):
    """A clone whose data files are intact, but whose sokoban_pins.py pins other digests
    for training and validation: what a changed generator meets when it regenerates."""
    root = tmp_path / "repinned"
    for name in ("sokoban_tools", "fairness", "examples", "images"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "sokoban_fairness.py", "sokoban_pins.py", "sokoban_published.py",
                 "sokoban_render.py", "README.md", "BENCHMARKS.md", "select_evaluation_256.py"):
        shutil.copyfile(REPO / name, root / name)
    script = root / "sokoban_pins.py"
    text = script.read_text(encoding="utf-8")
    for name, digit in ((TRAIN, "e"), (VALIDATION, "f")):
        text = text.replace(sokoban_fairness.PUBLISHED_FILES[name]["sha256"], digit * 64)
    script.write_text(text, encoding="utf-8")
    return root


def snapshot(root):
    """Every file of the clone with its inode and modification time: a rewrite by rename changes both."""
    return {path: (path.stat().st_ino, path.stat().st_mtime_ns) for path in sorted(root.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts and path.name != ".publish-lock"}


def refused_before_writing(done, name: str, pinned: str) -> None:
    """``done`` refused the data file ``name``, pinned as ``pinned``, in one line naming both digests and the fix."""
    assert done.returncode == 1, done.stdout + done.stderr
    (message,) = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert "Traceback" not in done.stderr
    for part in (f"{name} changed: SHA-256 {pinned} in release", sokoban_fairness.PUBLISHED_FILES[name]["sha256"],
                 "python -m sokoban_tools reproduce --new-release", "## Changelog"):
        assert part in message, part


def test_the_selector_refuses_a_validation_file_that_differs_from_its_pin_before_writing(repinned):
    before = snapshot(repinned)
    done = subprocess.run([sys.executable, "select_evaluation_256.py"], cwd=repinned, capture_output=True,
                          text=True, timeout=300)
    refused_before_writing(done, VALIDATION, "f" * 64)
    assert len(done.stderr.splitlines()) == 1
    assert snapshot(repinned) == before


def test_reproduce_with_a_changed_generator_rewrites_no_file(repinned):
    before = snapshot(repinned)
    done = subprocess.run([sys.executable, "-m", "sokoban_tools", "reproduce"], cwd=repinned, capture_output=True,
                          text=True, timeout=600)
    refused_before_writing(done, TRAIN, "e" * 64)  # by its first step, pools
    assert "reproduce: the pools step failed" in done.stderr
    assert snapshot(repinned) == before  # fairness/train.jsonl included: the clone still loads its data


def test_a_declared_new_release_may_rewrite_data_files_only_with_its_changelog_entry(repinned, monkeypatch):
    template = repinned / TEMPLATE
    monkeypatch.setattr(release, "CARD_TEMPLATE", template)
    regenerated = {repinned / TRAIN: (REPO / TRAIN).read_bytes()}  # what pools writes, unlike its pin
    with pytest.raises(ReleaseError, match="has no changelog entry for the new release"):
        release.check_rewrite(regenerated, new_release=True, repo=repinned)
    template.write_text(changelog_with(NEW_ENTRY), encoding="utf-8")
    release.check_rewrite(regenerated, new_release=True, repo=repinned)
    with pytest.raises(ReleaseError, match=re.escape(f"{TRAIN} changed")):
        release.check_rewrite(regenerated, new_release=False, repo=repinned)
    release.check_rewrite({repinned / "fairness/summary.json": b"{}"}, new_release=False, repo=repinned)  # no data


@pytest.mark.parametrize("command", [["-m", "sokoban_tools", "pools"], ["select_evaluation_256.py"]])
def test_data_file_writers_refuse_new_release_with_check(command):
    done = subprocess.run([sys.executable, *command, "--check", "--new-release"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "not allowed with argument --check" in done.stderr


@pytest.mark.parametrize("entry, problem", [
    ('{"sha256": "%s", "rows": "1000", "bytes": 10}' % ("0" * 64), "rows must be a whole number, got '1000' (str)"),
    ('{"sha256": "%s", "rows": 1000, "bytes": 1.5}' % ("0" * 64), "bytes must be a whole number, got 1.5"),
    ('{"sha256": "00", "rows": 1000, "bytes": 10}', "sha256 must be 64 hex digits, got '00'"),
    ('["sha256"]', "is list, not a dict"),
])
def test_pinned_release__refuses_an_entry_of_the_wrong_type(tmp_path, entry, problem):
    block = f'RELEASE = "1.0.0"\nPUBLISHED_FILES = {{"a.jsonl": {entry}}}\n'
    with pytest.raises(ReleaseError, match=re.escape(f"the pinned entry of a.jsonl {problem}")):
        pinned_release(block, tmp_path / "sokoban_pins.py")
    with pytest.raises(ReleaseError, match="RELEASE must be a version string"):
        pinned_release("RELEASE = 1.0\nPUBLISHED_FILES = {}\n", tmp_path / "sokoban_pins.py")


@pytest.fixture
def intact(tmp_path):
    """A copy of what the card reads, unchanged."""
    root = tmp_path / "intact"
    for name in ("fairness", "examples", "results"):
        shutil.copytree(REPO / name, root / name)
    for name in ("pyproject.toml", "sokoban_fairness.py", "sokoban_pins.py", "BENCHMARKS.md"):
        shutil.copyfile(REPO / name, root / name)
    return root


@pytest.mark.parametrize("damage, problem", [
    ("rows as text", "hold an entry of the wrong type (expected a whole number, got '5000' (str))"),
    ("a list", "hold an entry of the wrong type"),
    ("fifo", "is not a regular file but a FIFO (named pipe)"),
    ("directory", "is not a regular file but a directory"),
])
def test_card__a_report_of_the_wrong_type_or_no_regular_file_is_refused(intact, damage, problem):
    report = intact / "fairness" / "summary.json"
    document = json.loads(report.read_text())
    report.unlink()
    if damage == "rows as text":
        document["splits"]["train"]["rows"] = "5000"
        report.write_text(json.dumps(document))
    elif damage == "a list":
        report.write_text(json.dumps([document]))
    elif damage == "fifo":
        os.mkfifo(report)
    else:
        report.mkdir()
    with pytest.raises(card.CardError, match=re.escape(problem)):
        card.build(intact)


def test_pins_that_cannot_be_read_are_refused_naming_the_file(repinned):
    script = repinned / "sokoban_pins.py"
    script.unlink()
    script.mkdir()
    with pytest.raises(ReleaseError, match=re.escape(f"{script}: cannot be read (Is a directory)")):
        release.check_rewrite({repinned / TRAIN: b""}, new_release=False, repo=repinned)


def test_reproduce__refuses_new_release_with_check(capsys):
    assert reproduce_command.main(["reproduce", "--check", "--new-release"]) == 2
    assert "give one of them" in capsys.readouterr().err


def test_reproduce__passes_new_release_to_the_steps_writing_or_pinning_data_files_only(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(artifacts, "REPRODUCED_DIRECTORIES", (tmp_path,))  # not the clone's: tests run at once

    def run(name, options):
        calls.append([name, *options])
        return 0

    monkeypatch.setattr(reproduce_command, "run", run)
    monkeypatch.setattr(artifacts, "clear_interrupted_writes", lambda directories: [])
    assert reproduce_command.reproduce_command(["--new-release"]) == 0
    flagged = [command for command in calls if "--new-release" in command]
    assert len(calls) == len(reproduce_command.STEPS)
    assert flagged == [["pools", "--new-release"], ["selection", "--new-release"], ["card", "--new-release"]]


def test_the_published_release_is_the_changelogs_newest_entry_and_the_builders_version():
    versions = changelog_versions((REPO / TEMPLATE).read_text(encoding="utf-8"), REPO / TEMPLATE)
    assert versions[0] == sokoban_fairness.RELEASE
    for config in sokoban_fairness.SokobanFairness.BUILDER_CONFIGS:
        assert str(config.version) == sokoban_fairness.RELEASE


# --- The rule on its own ----------------------------------------------------------------

PINNED = Release("1.0.0", {"a.jsonl": {"sha256": "0" * 64, "rows": 2, "bytes": 10}})
CHANGED = {"a.jsonl": {"sha256": "1" * 64, "rows": 2, "bytes": 10}}


@pytest.mark.parametrize("files, changelog, new_release, expected", [
    (PINNED.files, ["1.0.0"], False, "1.0.0"),
    (CHANGED, ["1.1.0", "1.0.0"], True, "1.1.0"),
    (CHANGED, ["2.0.0", "1.0.0"], True, "2.0.0"),
])
def test_release_to_pin__accepts(files, changelog, new_release, expected, tmp_path):
    assert release_to_pin(PINNED, files, changelog, new_release, tmp_path) == expected


@pytest.mark.parametrize("files, changelog, new_release, problem", [
    (CHANGED, ["1.0.0"], False, f"SHA-256 {'0' * 64} in release 1.0.0, {'1' * 64} regenerated"),
    ({}, ["1.0.0"], False, "a.jsonl is no longer published"),
    ({**PINNED.files, "b.jsonl": PINNED.files["a.jsonl"]}, ["1.0.0"], False, "b.jsonl is new"),
    (CHANGED, ["1.0.0"], True, "no changelog entry for the new release"),
    (CHANGED, ["0.9.0"], True, "no changelog entry for the new release"),
    (PINNED.files, ["1.1.0", "1.0.0"], True, "nothing to release"),
    (PINNED.files, ["1.1.0", "1.0.0"], False, "newest changelog entry is 1.1.0"),
])
def test_release_to_pin__refuses(files, changelog, new_release, problem, tmp_path):
    with pytest.raises(ReleaseError, match=re.escape(problem)):
        release_to_pin(PINNED, files, changelog, new_release, tmp_path)


@pytest.mark.parametrize("section, problem", [
    ("", "has no '## Changelog' section"),
    ("## Changelog\n\nNothing yet.\n", "has no entry"),
    ("## Changelog\n\n- **1.0.0** — first\n- **1.1.0** — second\n", "1.0.0 comes before 1.1.0"),
    ("## Changelog\n\n- **1.0.0** — first\n- **1.0.0** — again\n", "1.0.0 comes before 1.0.0"),
])
def test_changelog_versions__refuses_a_missing_empty_or_unordered_changelog(section, problem, tmp_path):
    with pytest.raises(ReleaseError, match=re.escape(problem)):
        changelog_versions(f"# Card\n\n{section}\n## Licence\n\n- **9.9.9** — not a release\n", tmp_path)


def test_changelog_versions__reads_only_its_own_section(tmp_path):
    text = "# Card\n\n- **5.0.0** — elsewhere\n\n## Changelog\n\n- **1.1.0** — b\n- **1.0.0** — a\n\n## Licence\n"
    assert changelog_versions(text, tmp_path) == ["1.1.0", "1.0.0"]


def test_pinned_release__refuses_pins_without_their_release(tmp_path):
    with pytest.raises(ReleaseError, match="lacks RELEASE; restore it from git"):
        pinned_release("PUBLISHED_FILES = {}\n", tmp_path / "sokoban_pins.py")
    block = (REPO / card.PINS).read_text(encoding="utf-8")
    assert pinned_release(block, REPO) == Release(sokoban_fairness.RELEASE, sokoban_fairness.PUBLISHED_FILES)
