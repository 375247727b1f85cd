"""Where the dataset lives, spelled once: ``sokoban_tools.layout.HUB_REPO_ID``.

The card, its pages, the pins (the download advice of ``sokoban_published.py``), the
citation and the package's messages take it from there; the loading script, standalone,
spells it itself, and the card step refuses a script that names another.
"""

from __future__ import annotations

import re
import subprocess

import pytest

import sokoban_fairness
import sokoban_pins
import sokoban_published
from conftest import REPO
from sokoban_tools.layout import DOC_PAGES, HUB_REPO_ID, HUB_URL
from sokoban_tools.pipeline.publish import card
from sokoban_tools.records import boards

# a Hub dataset id as the repository's files would write one, owner/sokoban-fairness (not a path)
HUB_ID = re.compile(r"(?<![\w./-])\w[\w.-]*/sokoban-fairness(?![\w./-])")


def tracked_text_files() -> list:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return [REPO / name for name in listed if name.endswith((".py", ".md", ".toml", ".json"))
            and (REPO / name).is_file() and name != "tests/test_hub_id.py"]  # this file names others on purpose


def test_hub_id__is_a_real_id_and_every_file_of_the_repository_names_that_one_only():
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", HUB_REPO_ID) and not HUB_REPO_ID.startswith(("org/", "user/", "<"))
    assert HUB_URL == f"https://huggingface.co/datasets/{HUB_REPO_ID}"
    named = {}
    for path in tracked_text_files():
        text = path.read_text(encoding="utf-8", errors="replace").replace("github.com/", "")
        for found in set(HUB_ID.findall(text)) - {HUB_REPO_ID}:
            named.setdefault(found, []).append(str(path.relative_to(REPO)))
    assert named == {}


def test_hub_id__reaches_the_pins_the_loading_script_the_citation_and_the_boards_download():
    assert sokoban_pins.HUB_REPO == sokoban_published.HUB_REPO == HUB_REPO_ID
    assert sokoban_fairness._HOMEPAGE == HUB_URL
    assert f"Hugging Face dataset {HUB_REPO_ID}" in sokoban_fairness._CITATION
    assert boards.board_source(hub_revision="v1.0.0") == {"hub_repo": HUB_REPO_ID, "hub_revision": "v1.0.0"}
    assert f"`hf download {HUB_REPO_ID} fairness/evaluation.jsonl --repo-type dataset --force-download`" in \
        sokoban_published._download_again("fairness/evaluation.jsonl")
    citation = (REPO / "README.md").read_text(encoding="utf-8").split("```bibtex\n", 1)[1].split("```", 1)[0]
    assert citation.strip() == sokoban_fairness._CITATION.strip()


@pytest.mark.parametrize("spelling", ["org/sokoban-fairness", "elsewhere/sokoban-fairness"])
def test_card__refuses_a_loading_script_that_names_another_hub_dataset(tmp_path, spelling):
    script = (REPO / "sokoban_fairness.py").read_text(encoding="utf-8")
    (tmp_path / "sokoban_fairness.py").write_text(script.replace(HUB_REPO_ID, spelling, 1), encoding="utf-8")
    with pytest.raises(card.CardError, match=rf"sokoban_fairness.py: names {spelling}, but the Hub dataset is "
                                             rf"{re.escape(HUB_REPO_ID)} \(sokoban_tools.layout.HUB_REPO_ID\)"):
        card._citation(tmp_path)
    (tmp_path / "sokoban_fairness.py").write_text(script.replace(HUB_URL, "https://example.org"), encoding="utf-8")
    with pytest.raises(card.CardError, match="does not name it in _HOMEPAGE and _CITATION"):
        card._citation(tmp_path)


def test_card__says_where_the_dataset_lives_and_how_to_copy_it_with_git_with_or_without_lfs_or_hf():
    quick_start = (REPO / "README.md").read_text(encoding="utf-8").split("\n## Quick start\n", 1)[1].split("\n## ")[0]
    for words in (f"The dataset lives on the Hugging Face Hub as `{HUB_REPO_ID}`", f"`git clone {HUB_URL}`",
                  "`GIT_LFS_SKIP_SMUDGE=1`", f"`hf download {HUB_REPO_ID} --repo-type dataset --local-dir ",
                  "](docs/loading.md#a-local-copy)"):
        assert words in quick_start, words
    loading = (REPO / "docs" / "loading.md").read_text(encoding="utf-8").split("\n## A local copy\n", 1)[1]
    for command in (f"git clone {HUB_URL}", f"GIT_LFS_SKIP_SMUDGE=1 git clone {HUB_URL}",
                    f"hf download {HUB_REPO_ID} --repo-type dataset --local-dir sokoban-fairness"):
        assert f"\n{command}\n" in loading, command
    assert "`git lfs pull`" in loading and "the test suite does not" in loading
    assert "docs/loading.md" in DOC_PAGES


def test_a_pipeline_command_outside_a_clone_says_where_to_clone_from(monkeypatch, capsys):
    from sokoban_tools import __main__ as command_line

    monkeypatch.setattr(command_line, "has_pipeline", lambda: False)
    assert command_line.run("card", []) == 1
    assert f"clone the repository (`git clone {HUB_URL}`) and run `pip install -e .` in it" in capsys.readouterr().err
