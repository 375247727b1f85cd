"""Where the runtime's and scoring's boards come from (sokoban_tools.records.boards).

A local folder when given, a Hub revision when given, else the clone or the pinned
release on the Hub. What is missing is named as missing; only a file that is not the
published one says "download again". The Hub itself is exercised on loopback in
test_verl_agent_patched_trainer.py; here the Hub path runs offline, where it must name the file
and revision instead of huggingface_hub's advice to check the connection.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from conftest import REPO
from sokoban_published import PUBLISHED_FILES, RELEASE, ChecksumError
from sokoban_tools.layout import TRAIN_DATA, VALIDATION_DATA
from sokoban_tools.records.boards import RELEASE_REVISION, BoardsNotFound, board_file, load_boards
from venvs import offline_env, run_client


def copy_of_the_dataset(folder: Path) -> Path:
    for name in (TRAIN_DATA, VALIDATION_DATA):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, folder / name)
    return folder


def test_a_local_copy_gives_the_checked_boards_and_their_digest(tmp_path):
    rows, sha256 = load_boards(VALIDATION_DATA, dataset_dir=copy_of_the_dataset(tmp_path))
    assert len(rows) == 256 and sha256 == PUBLISHED_FILES[VALIDATION_DATA]["sha256"]


def test_in_a_clone_the_default_is_the_clones_own_file():
    assert board_file(VALIDATION_DATA) == REPO / VALIDATION_DATA


def test_the_pinned_release_is_the_hub_tag_named_after_the_release():
    assert RELEASE_REVISION == f"v{RELEASE}"


@pytest.mark.parametrize("folder, state", [("nowhere", "does not exist"), ("a-file", "is not a folder")])
def test_a_missing_folder_is_named_missing_not_stale(tmp_path, folder, state):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(BoardsNotFound) as caught:
        load_boards(VALIDATION_DATA, dataset_dir=tmp_path / folder)
    message = str(caught.value)
    assert f"the board folder {tmp_path / folder} {state}" in message and "again" not in message


def test_a_folder_without_the_file_names_the_file_missing(tmp_path):
    copy_of_the_dataset(tmp_path)
    (tmp_path / TRAIN_DATA).unlink()
    with pytest.raises(BoardsNotFound, match=f"{TRAIN_DATA} is missing from the board folder {tmp_path}"):
        load_boards(TRAIN_DATA, dataset_dir=str(tmp_path))


def test_only_a_wrong_digest_says_download_again(tmp_path):
    copy_of_the_dataset(tmp_path)
    data = bytearray((tmp_path / VALIDATION_DATA).read_bytes())
    data[data.index(b'"seed":') + 7] ^= 1  # another digit: same size, another digest
    (tmp_path / VALIDATION_DATA).write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="Download the current file again"):
        load_boards(VALIDATION_DATA, dataset_dir=tmp_path)


@pytest.mark.parametrize("arguments, error, message", [
    ({"hub_revision": 123}, ValueError, "hub_revision must be a non-empty string naming a Hub tag, branch or commit"),
    ({"hub_revision": ""}, ValueError, "hub_revision must be a non-empty string"),
    ({"hub_revision": "  "}, ValueError, "hub_revision must be a non-empty string"),
    ({"dataset_dir": 5}, TypeError, "dataset_dir must be a folder path"),
    ({"dataset_dir": ".", "hub_revision": "main"}, ValueError, "give dataset_dir .* or hub_revision .*, not both"),
])
def test_bad_sources_are_refused_naming_the_argument(arguments, error, message):
    with pytest.raises(error, match=message):
        board_file(VALIDATION_DATA, **arguments)


_OFFLINE = '''
sys.path.insert(0, ARGS["repo"])
import sokoban_tools.records.boards as boards

def default_outside_a_clone():
    boards.runs_from_clone = lambda: False  # as from site-packages
    return str(boards.board_file("fairness/evaluation.jsonl"))

report({
    "pinned": attempt(lambda: str(boards.board_file("fairness/evaluation.jsonl", hub_revision="abc123"))),
    "default": attempt(default_outside_a_clone),
})
'''


def test_offline_a_revision_missing_from_the_cache_names_the_file_and_the_revision(tmp_path):
    result = run_client(sys.executable, _OFFLINE,
                        {"repo": str(REPO)}, env=offline_env(tmp_path / "hf-home"))
    for key, revision in (("pinned", "abc123"), ("default", RELEASE_REVISION)):
        error = result[key]["error"][0]
        assert error["type"] == "BoardsNotFound", result
        assert f"{VALIDATION_DATA} at revision {revision!r}" in error["message"]
        assert "not in the local Hugging Face cache" in error["message"]
        assert "connection" not in error["message"]
