"""The loading script and the card on ``datasets`` 3.6, the last release that runs scripts.

Runs in ``.venv-datasets36`` (created on first use, see ``venvs.py``), in client
processes. On 3.6 a script load also reads the card's ``dataset_info``: its split
sizes are verified after the build, while the features the script declares win
over the card's script-free schema, so the decoded columns and images survive.
"""

from __future__ import annotations

import textwrap

import pytest

import sokoban_fairness as sf
from venvs import (DATASETS36, EVALUATION, REPO, TAMPERINGS, offline_env, published_copy, refusal_parts,
                   require_venv, run_client, special_copy, tampered_copy)

pytestmark = pytest.mark.slow

SPLIT_ROWS = {
    "fairness": {"train": 5000, "validation": 256},
    "source_pool_1000": {"train": 5000, "validation": 1000},
}
ROW_SCHEMA = {
    "task_id": "string",
    "seed": "int64",
    "room_fixed": "list<item: list<item: int8>>",
    "room_state": "list<item: list<item: int8>>",
    "xsb": "string",
    "shortest_solution": "string",
    "shortest_solution_length": "int32",
}
SCRIPT_SCHEMA = {**ROW_SCHEMA, **{column: "fixed_size_list<item: int8>[2]"
                                  for column in ("player_position", "box_position", "target_position")}}
IMAGE_SCHEMA = {**SCRIPT_SCHEMA, "image": "struct<bytes: binary, path: string>"}

# Summarises a DatasetDict in the client: rows, Arrow schema, and whether the row
# columns equal the JSON lines of the file each split was read from.
_SUMMARY = '''
import datasets, numpy as np
datasets.disable_progress_bars()
sys.path.insert(0, ARGS["repo"])
from sokoban_fairness import SPLIT_FILES, render_rgb

def file_rows(name):
    with open(ARGS["repo"] + "/" + name, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]

def summary(dataset, config):
    out = {}
    for split, part in dataset.items():
        row_columns = [c for c in part.column_names if c in ARGS["row_columns"]]
        out[split] = {
            "rows": part.num_rows,
            "schema": {field.name: str(field.type) for field in part.data.schema},
            "features": {name: type(feature).__name__ for name, feature in part.features.items()},
            "same_rows_as_file": part.select_columns(row_columns).to_list() == file_rows(SPLIT_FILES[config][split]),
        }
    return out
'''


@pytest.fixture(scope="module")
def python36():
    return require_venv(DATASETS36)


@pytest.fixture(scope="module")
def loads(python36, tmp_path_factory):
    """What loading the working tree reports on 3.6, by script and by card, in one client."""
    tmp = tmp_path_factory.mktemp("datasets36")
    program = _SUMMARY + textwrap.dedent('''
    script = ARGS["repo"] + "/sokoban_fairness.py"
    cache = ARGS["cache"]
    out = {}
    for config in ("fairness", "source_pool_1000"):
        out[f"script {config}"] = summary(datasets.load_dataset(script, config, trust_remote_code=True,
                                                             cache_dir=cache), config)
    pictured = datasets.load_dataset(script, "fairness", trust_remote_code=True, with_images=True, cache_dir=cache)
    out["script-images fairness"] = summary(pictured, "fairness")
    images = []
    for split, step in (("validation", 1), ("train", 50)):
        for row in pictured[split].select(range(0, pictured[split].num_rows, step)):
            state, fixed = np.array(row["room_state"]), np.array(row["room_fixed"])
            images.append([row["image"].size == (96, 96), row["image"].mode == "RGB",
                           bool(np.array_equal(np.asarray(row["image"]), render_rgb(fixed, state))),
                           int(state[tuple(row["player_position"])]), int(state[tuple(row["box_position"])]),
                           int(fixed[tuple(row["target_position"])])])
    out["images"] = images
    for config in ("fairness", "source_pool_1000"):
        out[f"card {config}"] = summary(datasets.load_dataset(ARGS["repo"], config, cache_dir=cache), config)
    builder = datasets.load_dataset_builder(script, "fairness", trust_remote_code=True, cache_dir=cache)
    out["unbuilt-splits"] = {name: split.num_examples for name, split in (builder.info.splits or {}).items()}
    out["version"] = datasets.__version__
    report(out)
    ''')
    args = {"repo": REPO, "cache": tmp / "cache", "row_columns": list(ROW_SCHEMA)}
    return run_client(python36, program, args, env=offline_env(tmp / "hf-home"))


def test_the_client_runs_datasets_3_6(loads):
    assert loads["version"] == "3.6.0"


@pytest.mark.parametrize("config", SPLIT_ROWS)
def test_script_gives_the_splits_and_decoded_columns(loads, config):
    result = loads[f"script {config}"]
    assert {split: part["rows"] for split, part in result.items()} == SPLIT_ROWS[config]
    for part in result.values():
        assert part["schema"] == SCRIPT_SCHEMA
        assert part["same_rows_as_file"]


def test_script_with_images_keeps_its_image_and_decoded_columns_over_the_cards_schema(loads):
    result = loads["script-images fairness"]
    assert {split: part["rows"] for split, part in result.items()} == SPLIT_ROWS["fairness"]
    for part in result.values():
        assert part["schema"] == IMAGE_SCHEMA
        assert part["features"]["image"] == "Image"
        assert part["same_rows_as_file"]


def test_images_are_the_game_images_and_positions_match_the_grids(loads):
    assert len(loads["images"]) == 256 + 100
    assert all(row == [True, True, True, 5, row[4], 2] and row[4] in (3, 4) for row in loads["images"])


def test_script_reads_the_cards_split_sizes_before_building(loads):
    assert loads["unbuilt-splits"] == SPLIT_ROWS["fairness"]


@pytest.mark.parametrize("config", SPLIT_ROWS)
def test_script_free_load_reads_the_card(loads, config):
    result = loads[f"card {config}"]
    assert {split: part["rows"] for split, part in result.items()} == SPLIT_ROWS[config]
    for part in result.values():
        assert part["schema"] == ROW_SCHEMA
        assert part["same_rows_as_file"]


# ---------------------------------------------------------------------------
# Tampered files through the script (fresh cache each) and through the card
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tampered(python36, tmp_path_factory):
    """case -> what each 3.6 path did with that tampered validation file, in one client."""
    tmp = tmp_path_factory.mktemp("tampered36")
    roots = {case: tampered_copy(tmp / case, case) for case in TAMPERINGS}
    program = '''
    import datasets
    datasets.disable_progress_bars()
    out = {}
    for case, root in ARGS["roots"].items():
        out[case] = {
            "script": attempt(lambda: datasets.load_dataset(
                root + "/sokoban_fairness.py", "fairness", trust_remote_code=True,
                cache_dir=root + "/cache-script")["validation"].num_rows),
            "card": attempt(lambda: datasets.load_dataset(
                root, "fairness", cache_dir=root + "/cache-card")["validation"].num_rows),
        }
    report(out)
    '''
    found = {case: (root / EVALUATION).read_bytes() for case, root in roots.items()}
    return run_client(python36, program, {"roots": roots}, env=offline_env(tmp / "hf-home")), found


@pytest.mark.parametrize("case", TAMPERINGS)
def test_script_refuses_a_tampered_file_naming_digests_or_sizes_and_the_fix_unwrapped(tampered, case):
    results, found = tampered
    outcome = results[case]["script"]
    assert "error" in outcome, f"accepted with {outcome.get('ok')} validation rows"
    # The outermost error, the last line a user sees, is the refusal itself, not a
    # DatasetGenerationError with the refusal hidden in its cause.
    assert outcome["error"][0]["type"] == "ChecksumError", outcome["error"]
    for part in refusal_parts(found[case]):
        assert part in outcome["error"][0]["message"]


@pytest.fixture(scope="module")
def not_what_they_seem(python36, tmp_path_factory):
    """kind -> what loading the script on 3.6 did with that validation file, in one client,
    each load stopped by an alarm if it hangs."""
    tmp = tmp_path_factory.mktemp("special36")
    roots = {kind: special_copy(tmp / kind, kind) for kind in ("fifo", "symlink_to_dev_zero", "three_gib_file")}
    roots["no_pillow"] = published_copy(tmp / "no_pillow")
    program = '''
    import signal
    import datasets
    datasets.disable_progress_bars()

    def hung(signum, frame):
        raise TimeoutError("still loading after 120 s")

    signal.signal(signal.SIGALRM, hung)
    out = {}
    for kind, root in ARGS["roots"].items():
        if kind == "no_pillow":
            sys.modules["PIL"] = None  # what `import PIL` sees when Pillow is absent
        signal.alarm(120)
        out[kind] = attempt(lambda: datasets.load_dataset(
            root + "/sokoban_fairness.py", "fairness", trust_remote_code=True, with_images=kind == "no_pillow",
            cache_dir=root + "/cache")["validation"].num_rows)
        signal.alarm(0)
    report(out)
    '''
    return run_client(python36, program, {"roots": roots}, env=offline_env(tmp / "hf-home")), roots


@pytest.mark.parametrize("kind, found", [
    ("fifo", "a FIFO (named pipe)"),
    ("symlink_to_dev_zero", "a character device (it resolves to /dev/zero)"),
    ("three_gib_file", "found 3,221,225,472 bytes"),
])
def test_script_refuses_a_fifo_a_device_or_a_huge_file_at_once_unwrapped(not_what_they_seem, kind, found):
    results, roots = not_what_they_seem
    error = results[kind]["error"][0]
    assert error["type"] == "ChecksumError", results[kind]
    expected = sf.PUBLISHED_FILES[EVALUATION]["bytes"]
    for part in (EVALUATION, str(roots[kind] / EVALUATION), found, f"{expected:,} bytes", "force_redownload"):
        assert part in error["message"]


def test_script_with_images_without_pillow_says_so_first(not_what_they_seem):
    results, _ = not_what_they_seem
    error = results["no_pillow"]["error"][0]
    assert error["type"] == "ImportError", results["no_pillow"]
    assert "with_images=True needs Pillow" in error["message"] and "pip install pillow" in error["message"]


def test_script_free_load_on_3_6_checks_split_row_counts_only(tampered):
    results, _ = tampered
    card = {case: result["card"] for case, result in results.items()}
    assert card["flipped_byte"] == {"ok": 256}
    assert card["truncated_mid_line"]["error"][0]["type"] == "DatasetGenerationError"
    for case in ("truncated_at_line", "pool_in_place"):
        assert card[case]["error"][0]["type"] == "NonMatchingSplitsSizesError"
