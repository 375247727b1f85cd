"""Published data is frozen: a changed data file needs --new-release and a changelog entry."""

import hashlib
import re
import shutil
import subprocess
import sys

import pytest

import sokoban_fairness
from conftest import REPO
from sokoban_tools import __main__ as reproduce_command
from sokoban_tools.pipeline import artifacts
from sokoban_tools.pipeline.publish import card
from sokoban_tools.pipeline.publish.release import (Release, ReleaseError, changelog_versions, pinned_release,
                                                    release_to_pin)

TRAIN = "fairness/train.jsonl"
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
    for name in ("sokoban_tools", "fairness", "examples", "images", "docs"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "sokoban_fairness.py", "sokoban_pins.py", "sokoban_published.py", "sokoban_render.py",
                 "README.md", "BENCHMARKS.md"):
        shutil.copyfile(REPO / name, root / name)
    train = root / TRAIN
    train.write_bytes(b"".join(train.read_bytes().splitlines(keepends=True)[:-1]))
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


def test_reproduce__refuses_new_release_with_check(capsys):
    assert reproduce_command.main(["reproduce", "--check", "--new-release"]) == 2
    assert "give one of them" in capsys.readouterr().err


def test_reproduce__passes_new_release_to_the_pinning_step_only(monkeypatch):
    calls = []

    def run(name, options):
        calls.append([name, *options])
        return 0

    monkeypatch.setattr(reproduce_command, "run", run)
    monkeypatch.setattr(artifacts, "clear_interrupted_writes", lambda directories: [])
    assert reproduce_command.reproduce_command(["--new-release"]) == 0
    flagged = [command for command in calls if "--new-release" in command]
    assert len(calls) == len(reproduce_command.STEPS) and flagged == [["card", "--new-release"]]


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
