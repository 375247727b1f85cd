"""The loading script and the dataset card on the current ``datasets`` release, in process.

Three ways in, each checked against the published files: the script-free path
(``load_dataset(<repo>, config)`` reading the card's YAML), the builder class
``SokobanFairness`` used directly (how the script runs on releases that no
longer run scripts), and streaming. The card's YAML is parsed as the Hub
libraries parse it.
"""

from __future__ import annotations

import json

import datasets
import numpy as np
import pytest
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard

import sokoban_fairness as sf
from venvs import CARD, REPO, content_hash

# The figures the spec promises; everything else is compared with PUBLISHED_FILES.
SPLIT_ROWS = {
    "fairness": {"train": 5000, "validation": 256},
    "source_pool_1000": {"train": 5000, "validation": 1000},
}
ROW_FEATURES = datasets.Features({
    "task_id": datasets.Value("string"),
    "seed": datasets.Value("int64"),
    "room_fixed": datasets.Sequence(datasets.Sequence(datasets.Value("int8"))),
    "room_state": datasets.Sequence(datasets.Sequence(datasets.Value("int8"))),
    "xsb": datasets.Value("string"),
    "shortest_solution": datasets.Value("string"),
    "shortest_solution_length": datasets.Value("int32"),
})
DECODED = ("player_position", "box_position", "target_position")


def file_rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (REPO / name).read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("datasets-cache")


@pytest.fixture(scope="module")
def script_free(cache):
    """config -> DatasetDict read through the card's YAML, without the script."""
    return {config: datasets.load_dataset(str(REPO), config, cache_dir=str(cache)) for config in SPLIT_ROWS}


def build(cache, config: str, with_images: bool):
    builder = sf.SokobanFairness(config_name=config, base_path=str(REPO), cache_dir=str(cache),
                                 hash=content_hash(REPO), with_images=with_images)
    builder.download_and_prepare()
    return builder


@pytest.fixture(scope="module")
def built(cache):
    """(config, with_images) -> DatasetDict made by the builder class; images for fairness only."""
    cases = [("fairness", False), ("source_pool_1000", False), ("fairness", True)]
    return {case: build(cache, *case).as_dataset() for case in cases}


@pytest.fixture(scope="module")
def card_data():
    return DatasetCard.load(REPO / CARD).data


# ---------------------------------------------------------------------------
# Split layout: every path gives the published files, row for row
# ---------------------------------------------------------------------------

def test_split_files_name_published_files_with_the_promised_row_counts():
    for config, splits in sf.SPLIT_FILES.items():
        assert {split: sf.PUBLISHED_FILES[name]["rows"] for split, name in splits.items()} == SPLIT_ROWS[config]
    assert sf.SokobanFairness.DEFAULT_CONFIG_NAME == "fairness"


@pytest.mark.parametrize("config", SPLIT_ROWS)
def test_script_free_load_gives_the_splits_rows_and_typed_columns_of_the_files(script_free, config):
    dataset = script_free[config]
    assert {split: part.num_rows for split, part in dataset.items()} == SPLIT_ROWS[config]
    for split, part in dataset.items():
        assert part.features == ROW_FEATURES
        assert part.to_list() == file_rows(sf.SPLIT_FILES[config][split])


@pytest.mark.parametrize("config", SPLIT_ROWS)
def test_builder_gives_the_same_rows_plus_decoded_positions(script_free, built, config):
    dataset = built[(config, False)]
    assert {split: part.num_rows for split, part in dataset.items()} == SPLIT_ROWS[config]
    for split, part in dataset.items():
        assert part.features == datasets.Features({
            **ROW_FEATURES, **{column: datasets.Sequence(datasets.Value("int8"), length=2) for column in DECODED}
        })
        assert part.select_columns(list(ROW_FEATURES)).to_list() == script_free[config][split].to_list()


def test_decoded_positions_agree_with_the_grids(built):
    for part in built[("fairness", False)].values():
        for row in part:
            state, fixed = np.array(row["room_state"]), np.array(row["room_fixed"])
            assert state[tuple(row["player_position"])] == 5
            assert state[tuple(row["box_position"])] in (3, 4)
            assert fixed[tuple(row["target_position"])] == 2
            assert (state == 5).sum() == 1 and np.isin(state, (3, 4)).sum() == 1 and (fixed == 2).sum() == 1


def test_images_are_96x96_rgb_game_images_of_each_board(built):
    plain, pictured = built[("fairness", False)], built[("fairness", True)]
    for split, part in pictured.items():
        assert part.features["image"] == datasets.Image(mode="RGB")
        assert part.remove_columns("image").to_list() == plain[split].to_list()
        step = 1 if split == "validation" else 50  # every validation image, every 50th training one
        for row in part.select(range(0, part.num_rows, step)):
            image = row["image"]
            assert (image.size, image.mode) == ((96, 96), "RGB")
            assert np.array_equal(np.asarray(image), sf.render_rgb(row["room_fixed"], row["room_state"]))


def test_a_second_build_with_the_same_hash_is_read_from_the_cache(cache, built):
    builder = build(cache, "fairness", False)
    cached = builder.as_dataset()
    assert cached["validation"].cache_files == built[("fairness", False)]["validation"].cache_files


# ---------------------------------------------------------------------------
# Streaming
# ---------------------------------------------------------------------------

def test_script_free_streaming_yields_the_file_rows_in_order():
    streamed = datasets.load_dataset(str(REPO), "fairness", streaming=True)
    assert list(streamed["validation"]) == file_rows(sf.SPLIT_FILES["fairness"]["validation"])
    assert next(iter(streamed["train"])) == file_rows(sf.TRAIN_FILE)[0]


def test_builder_streaming_yields_the_built_rows(cache, built):
    builder = sf.SokobanFairness(config_name="fairness", base_path=str(REPO), cache_dir=str(cache),
                                 hash=content_hash(REPO), with_images=True)
    streamed = builder.as_streaming_dataset()
    rows = list(streamed["validation"])
    expected = built[("fairness", True)]["validation"]
    assert len(rows) == expected.num_rows
    for got, want in zip(rows[:8], expected):
        assert got.pop("image").tobytes() == want.pop("image").tobytes()
        assert got == want


# ---------------------------------------------------------------------------
# The card's YAML, as the Hub libraries read it
# ---------------------------------------------------------------------------

def test_card_configs_name_the_split_files(card_data):
    configs = MetadataConfigs.from_dataset_card_data(card_data)
    assert set(configs) == set(sf.SPLIT_FILES)
    for config, splits in sf.SPLIT_FILES.items():
        files = {entry["split"]: entry["path"] for entry in configs[config]["data_files"]}
        assert files == splits
    assert configs["fairness"].get("default") is True and not configs["source_pool_1000"].get("default")
    assert configs.get_default_config_name() == "fairness"


def test_card_dataset_info_gives_the_row_schema_and_published_sizes(card_data, script_free):
    infos = DatasetInfosDict.from_dataset_card_data(card_data)
    assert set(infos) == set(sf.SPLIT_FILES)
    for config, info in infos.items():
        assert info.features == ROW_FEATURES == script_free[config]["train"].features
        for split, name in sf.SPLIT_FILES[config].items():
            published = sf.PUBLISHED_FILES[name]
            assert info.splits[split].num_examples == published["rows"] == SPLIT_ROWS[config][split]
            assert info.splits[split].num_bytes == (REPO / name).stat().st_size
        assert info.download_size == info.dataset_size == sum((REPO / n).stat().st_size
                                                             for n in sf.SPLIT_FILES[config].values())


def test_card_schema_is_the_scripts_schema_without_what_the_script_adds(card_data, cache):
    info = DatasetInfosDict.from_dataset_card_data(card_data)["fairness"]
    for with_images in (False, True):
        builder = sf.SokobanFairness(config_name="fairness", with_images=with_images, cache_dir=str(cache))
        script = builder.info.features
        added = [column for column in script if column not in info.features]
        assert added == [*DECODED, *(["image"] if with_images else [])]
        assert {column: script[column] for column in info.features} == dict(info.features)


def test_card_metadata_fields(card_data):
    assert card_data.license == sf._LICENSE
    assert card_data.pretty_name == "Sokoban fairness"
    assert "reinforcement-learning" in card_data.task_categories


@pytest.mark.parametrize("with_images", ["false", "True", 1])
def test_bad_input__with_images_that_is_not_a_bool_is_refused_naming_it(tmp_path, with_images):
    with pytest.raises(TypeError, match="with_images must be True or False"):
        sf.SokobanFairness(config_name="fairness", base_path=str(REPO), cache_dir=str(tmp_path),
                           hash=content_hash(REPO), with_images=with_images)
