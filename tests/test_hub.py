"""The Hub path, for real but on loopback: a commit of the working tree served by olah.

``hub_mirror.serve_dataset_repo`` serves a git commit as dataset
``HUB_REPO_ID`` (sokoban_tools.layout); clients run in subprocesses whose huggingface_hub and
datasets talk only to it. The commit is HEAD plus the working tree's card,
loading script, its renderer and data folder, so the test checks what is about to be pushed.
A second commit replaces the validation file by the 1,000-row pool, as a stale
mirror or an old upload would.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sokoban_fairness as sf
from hub_mirror import hub_env, serve_dataset_repo
from sokoban_tools.layout import HUB_REPO_ID
from venvs import CARD, DATASETS36, EVALUATION, OLAH, POOL, REPO, SCRIPT, SCRIPT_FILES, require_venv, run_client

pytestmark = pytest.mark.slow

REPO_ID = HUB_REPO_ID
LOADING_PAGE = "docs/loading.md"  # where the card's loading variants live
SPLIT_ROWS = {
    "fairness": {"train": 5000, "validation": 256},
    "source_pool_1000": {"train": 5000, "validation": 1000},
}
PYTHON = Path(sys.executable)  # the main venv: the current datasets release and the `hf` command


def git(directory: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(directory), "-c", "user.name=hub test", "-c", "user.email=hub-test@localhost",
         "-c", "commit.gpgsign=false", *args],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


@pytest.fixture(scope="module")
def commits(tmp_path_factory):
    """(git clone, commit of the working tree's published files, commit with the pool as validation)."""
    clone = tmp_path_factory.mktemp("hub-git") / "sokoban-fairness"
    done = subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for name in (CARD, *SCRIPT_FILES):
        shutil.copyfile(REPO / name, clone / name)
    shutil.copytree(REPO / "fairness", clone / "fairness", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(clone, "add", CARD, *SCRIPT_FILES, "fairness")
    git(clone, "commit", "--quiet", "--allow-empty", "-m", "The working tree's card, script and data")
    published = git(clone, "rev-parse", "HEAD")
    shutil.copyfile(REPO / POOL, clone / EVALUATION)
    git(clone, "commit", "--quiet", "-am", "A stale validation file: the 1,000-row pool")
    stale = git(clone, "rev-parse", "HEAD")
    return clone, published, stale


@pytest.fixture(scope="module")
def olah_python():
    return require_venv(OLAH)


def serve(clone: Path, revision: str, olah_python: Path):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OLAH_PYTHON", str(olah_python))
        with serve_dataset_repo(clone, repo_id=REPO_ID, revision=revision) as endpoint:
            yield endpoint


@pytest.fixture(scope="module")
def hub(commits, olah_python):
    clone, published, _ = commits
    yield from serve(clone, published, olah_python)


@pytest.fixture(scope="module")
def stale_hub(commits, olah_python):
    clone, _, stale = commits
    yield from serve(clone, stale, olah_python)


@pytest.fixture(scope="module")
def python36():
    return require_venv(DATASETS36)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refusal(errors: list[dict]) -> str:
    """The message of a client's outermost error, which must be the ChecksumError itself:
    the last line a user sees names the file and the fix, on every datasets version."""
    assert errors[0]["type"] == "ChecksumError", errors
    return errors[0]["message"]


def assert_names_the_pool(message: str) -> None:
    """The refusal of the pool in place of the evaluation file: refused by its size."""
    published, pool = sf.PUBLISHED_FILES[EVALUATION], sf.PUBLISHED_FILES[POOL]
    for part in (EVALUATION, f"expected {published['bytes']:,} bytes", published["sha256"],
                 f"found {pool['bytes']:,} bytes", "force_redownload"):
        assert part in message


# ---------------------------------------------------------------------------
# The published commit
# ---------------------------------------------------------------------------

def test_load_dataset_by_repo_id_gives_the_published_splits(hub, tmp_path):
    result = run_client(PYTHON, '''
    import datasets
    datasets.disable_progress_bars()
    out = {}
    for config in ("fairness", "source_pool_1000"):
        dataset = datasets.load_dataset(HUB_REPO_ID, config)
        out[config] = {split: [part.num_rows, part.column_names] for split, part in dataset.items()}
    report(out)
    ''', env=hub_env(hub, tmp_path / "hf-home"))
    for config, rows in SPLIT_ROWS.items():
        assert {split: got[0] for split, got in result[config].items()} == rows
        for _, columns in result[config].values():
            assert columns == ["task_id", "seed", "room_fixed", "room_state", "xsb", "shortest_solution",
                               "shortest_solution_length"]


def test_hf_download_gives_the_published_bytes(hub, tmp_path):
    target = tmp_path / "download"
    done = subprocess.run(
        [str(PYTHON.parent / "hf"), "download", REPO_ID, "--repo-type", "dataset", "--local-dir", str(target)],
        capture_output=True, text=True, env=hub_env(hub, tmp_path / "hf-home"), timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    jsonl = sorted(path.relative_to(target).as_posix() for path in (target / "fairness").glob("*.jsonl"))
    assert jsonl == sorted(sf.PUBLISHED_FILES)
    for name, published in sf.PUBLISHED_FILES.items():
        assert sha256(target / name) == published["sha256"], name
    for name in (CARD, *SCRIPT_FILES):
        assert (target / name).read_bytes() == (REPO / name).read_bytes(), name


def test_the_builder_class_reads_an_hf_base_path_and_checks_what_it_downloads(hub, tmp_path):
    result = run_client(PYTHON, '''
    import sys
    sys.path.insert(0, ARGS["repo"])
    import datasets
    from sokoban_fairness import SokobanFairness, cache_hash
    datasets.disable_progress_bars()
    builder = SokobanFairness(config_name="fairness", base_path="hf://datasets/" + HUB_REPO_ID,
                              cache_dir=ARGS["cache"], hash=cache_hash(), with_images=True)
    builder.download_and_prepare()
    dataset = builder.as_dataset()
    report({split: [part.num_rows, part[0]["image"].size] for split, part in dataset.items()})
    ''', args={"repo": str(REPO), "cache": str(tmp_path / "cache")}, env=hub_env(hub, tmp_path / "hf-home"))
    assert result == {"train": [5000, [96, 96]], "validation": [256, [96, 96]]}


def test_datasets36_runs_the_script_from_a_snapshot_but_not_from_a_hub_path(hub, python36, tmp_path):
    result = run_client(python36, '''
    import datasets, huggingface_hub
    datasets.disable_progress_bars()
    snapshot = huggingface_hub.snapshot_download(HUB_REPO_ID, repo_type="dataset")

    def rows(dataset):
        return {split: [part.num_rows, part.column_names] for split, part in dataset.items()}

    report({
        "snapshot": attempt(lambda: rows(datasets.load_dataset(
            snapshot + "/sokoban_fairness.py", "fairness", trust_remote_code=True))),
        "hub-script-path": attempt(lambda: rows(datasets.load_dataset(
            HUB_REPO_ID + "/sokoban_fairness.py", "fairness", trust_remote_code=True))),
        "repo-id": attempt(lambda: rows(datasets.load_dataset(HUB_REPO_ID, "fairness"))),
    })
    ''', env=hub_env(hub, tmp_path / "hf-home"))
    decoded = ["player_position", "box_position", "target_position"]
    snapshot = result["snapshot"]["ok"]
    assert {split: got[0] for split, got in snapshot.items()} == SPLIT_ROWS["fairness"]
    assert all(got[1][-3:] == decoded for got in snapshot.values())
    # 3.6 takes a path ending in .py for a local file only; a Hub repo runs a script
    # only if the script is named after the repo (sokoban-fairness.py), which ours is not.
    error = result["hub-script-path"]["error"][0]
    assert error["type"] == "FileNotFoundError" and "Couldn't find a dataset script" in error["message"]
    # By repo id, 3.6 reads the card's YAML: the script-free columns.
    by_id = result["repo-id"]["ok"]
    assert {split: got[0] for split, got in by_id.items()} == SPLIT_ROWS["fairness"]
    assert all(not set(decoded) & set(got[1]) for got in by_id.values())


# ---------------------------------------------------------------------------
# A commit whose validation file is the 1,000-row pool
# ---------------------------------------------------------------------------

def test_a_stale_file_from_the_hub_is_refused_by_the_builder_and_by_split_sizes(stale_hub, tmp_path):
    result = run_client(PYTHON, '''
    import datasets, huggingface_hub
    datasets.disable_progress_bars()
    snapshot = huggingface_hub.snapshot_download(HUB_REPO_ID, repo_type="dataset")
    sys.path.insert(0, snapshot)
    import sokoban_fairness

    def build():
        builder = sokoban_fairness.SokobanFairness(
            config_name="fairness", base_path=snapshot, cache_dir=ARGS["cache"], hash=snapshot[-40:])
        builder.download_and_prepare()
        return builder.as_dataset(split="validation").num_rows

    report({
        "script": sokoban_fairness.__file__,
        "snapshot": snapshot,
        "builder": attempt(build),
        "repo-id": attempt(lambda: datasets.load_dataset(HUB_REPO_ID, "fairness")["validation"].num_rows),
    })
    ''', {"cache": tmp_path / "cache"}, env=hub_env(stale_hub, tmp_path / "hf-home"))
    assert Path(result["script"]).parent == Path(result["snapshot"])
    assert_names_the_pool(refusal(result["builder"]["error"]))
    split_error = result["repo-id"]["error"][0]
    assert split_error["type"] == "NonMatchingSplitsSizesError"
    assert "num_examples=256" in split_error["message"] and "num_examples=1000" in split_error["message"]


def test_a_stale_file_from_the_hub_is_refused_by_the_script_on_datasets36(stale_hub, python36, tmp_path):
    result = run_client(python36, '''
    import datasets, huggingface_hub
    datasets.disable_progress_bars()
    snapshot = huggingface_hub.snapshot_download(HUB_REPO_ID, repo_type="dataset")
    report(attempt(lambda: datasets.load_dataset(
        snapshot + "/sokoban_fairness.py", "fairness", trust_remote_code=True)["validation"].num_rows))
    ''', env=hub_env(stale_hub, tmp_path / "hf-home"))
    assert_names_the_pool(refusal(result["error"]))



# ---------------------------------------------------------------------------
# The runtime's boards, downloaded at a pinned revision
# ---------------------------------------------------------------------------

_RUNTIME_BOARDS = '''
sys.path.insert(0, ARGS["repo"])
from sokoban_tools.records.boards import load_boards

def boards():
    rows, sha256 = load_boards("fairness/evaluation.jsonl", hub_revision=ARGS["revision"])
    return [len(rows), rows[0].task_id, sha256]

report(attempt(boards))
'''


def test_the_runtime_downloads_its_boards_at_a_pinned_revision(hub, commits, tmp_path):
    _, published, _ = commits
    result = run_client(PYTHON, _RUNTIME_BOARDS, {"repo": str(REPO), "revision": published},
                        env=hub_env(hub, tmp_path / "hf-home"))
    expected = sf.PUBLISHED_FILES[EVALUATION]
    assert result["ok"][0] == expected["rows"] and result["ok"][2] == expected["sha256"]


def test_the_runtime_refuses_boards_of_a_stale_revision(stale_hub, commits, tmp_path):
    _, _, stale = commits
    result = run_client(PYTHON, _RUNTIME_BOARDS, {"repo": str(REPO), "revision": stale},
                        env=hub_env(stale_hub, tmp_path / "hf-home"))
    assert_names_the_pool(refusal(result["error"]))


def test_the_runtime_names_a_release_tag_the_hub_does_not_have(hub, tmp_path):
    """A release whose tag was never pushed: the refusal names the tag and the way out, not a raw 401."""
    result = run_client(PYTHON, _RUNTIME_BOARDS, {"repo": str(REPO), "revision": "v0.0.0-never-pushed"},
                        env=hub_env(hub, tmp_path / "hf-home"))
    error = result["error"][0]
    assert error["type"] == "BoardsNotFound", result
    assert "revision 'v0.0.0-never-pushed'" in error["message"] and "local copy" in error["message"]


# ---------------------------------------------------------------------------
# The card's snippets, as written, from a folder that is not the download's parent
# ---------------------------------------------------------------------------

def card_snippet(marker: str) -> str:
    """The Python block of the card or its loading page that contains ``marker``."""
    text = "".join((REPO / page).read_text(encoding="utf-8") for page in (CARD, LOADING_PAGE))
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return next(block for block in blocks if marker in block)


SHOW_SPLITS = ("\nprint({split: part.num_rows for split, part in ds.items()}, "
               "getattr(ds['validation'][0].get('image'), 'size', None))\n")


@pytest.mark.parametrize("marker, python, shown", [
    (f'load_dataset("{HUB_REPO_ID}", "fairness")', "current", "None"),
    ('load_dataset(f"{path}/sokoban_fairness.py"', "3.6", "(96, 96)"),
    ("base_path=path,", "current", "(96, 96)"),
    ('base_path="hf://datasets/', "current", "None"),
    ('load_dataset("parquet"', "current", "(96, 96)"),
])
def test_the_cards_download_snippets_run_as_written_from_any_folder(hub, python36, tmp_path, marker, python, shown):
    elsewhere = tmp_path / "some" / "other" / "folder"
    elsewhere.mkdir(parents=True)
    env = {**hub_env(hub, tmp_path / "hf-home"), "HF_DATASETS_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([str(python36 if python == "3.6" else PYTHON), "-c", card_snippet(marker) + SHOW_SPLITS],
                          cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "{'train': 5000, 'validation': 256} " + shown


def test_the_cards_hub_path_snippet_downloads_only_the_script_and_its_modules(hub, tmp_path):
    """The hf:// snippet's allow_patterns takes exactly the loading script and the modules it
    imports from beside itself, of the 100-odd Python files in the repository."""
    import ast

    env = {**hub_env(hub, tmp_path / "hf-home"), "HF_DATASETS_CACHE": str(tmp_path / "cache")}
    listing = "\nimport os\nprint(sorted(os.listdir(sys.path[0])))\n"
    snippet = card_snippet('base_path="hf://datasets/').split("from sokoban_fairness import")[0]
    done = subprocess.run([str(PYTHON), "-c", snippet + listing], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    downloaded = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert [name for name in downloaded if not name.startswith(".")] == sorted(SCRIPT_FILES)
