"""The Parquet files of the boards with their game images, read as a reader of data files
only reads them (``datasets`` without the script, on 5.x and 3.6, and pandas): the rows of the
fairness configuration, the loading script's game frame as RGB, pinned, reproducible, and the
card's JSONL configurations untouched."""

import hashlib
import json
import os
import subprocess
import sys
import tomllib

import datasets
import numpy as np
import pytest

import sokoban_pins
import sokoban_fairness as sf
from conftest import REPO
from sokoban_tools.layout import CONFIGURATIONS, IMAGE_TABLES
from sokoban_tools.pipeline.publish import card, image_tables
from venvs import DATASETS36, offline_env, require_venv, run_client

SPLITS = CONFIGURATIONS["fairness"]


def file_rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (REPO / name).read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The image tables as ``datasets`` reads their data files, without the script or the card."""
    files = {split: str(REPO / name) for split, name in IMAGE_TABLES.items()}
    return datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path_factory.mktemp("cache")))


def test_image_tables__hold_the_fairness_rows_in_order_typed_as_the_cards_yaml(tables):
    for split, name in SPLITS.items():
        rows = tables[split].remove_columns("image")
        assert rows.to_list() == file_rows(name)
        assert {column: str(feature) for column, feature in rows.features.items()} == {
            "task_id": "Value('string')", "seed": "Value('int64')",
            "room_fixed": "List(List(Value('int8')))", "room_state": "List(List(Value('int8')))",
            "xsb": "Value('string')", "shortest_solution": "Value('string')",
            "shortest_solution_length": "Value('int32')"}
        assert isinstance(tables[split].features["image"], datasets.Image)


def test_column_types__name_every_row_key_in_order_as_the_loading_script_checks_rows():
    from sokoban_published import ROW_KEYS
    from sokoban_tools.records.rows import COLUMN_TYPES

    assert tuple(name for name, _, _ in COLUMN_TYPES) == ROW_KEYS


def test_image_tables__images_decode_to_the_loading_scripts_rgb_game_frame_as_they_are(tables):
    """``np.array(row["image"])`` of a learner who reads the Parquet files is the (96, 96, 3) frame the
    loading script gives, with no ``.convert("RGB")``: a palette PNG would decode to mode P, (96, 96)."""
    for split, step in (("validation", 1), ("train", 97)):
        for index in range(0, tables[split].num_rows, step):
            row = tables[split][index]
            assert row["image"].mode == "RGB"
            frame = np.array(row["image"])
            assert frame.shape == (96, 96, 3) and frame.dtype == np.uint8
            assert np.array_equal(frame, sf.render_rgb(np.array(row["room_fixed"]), np.array(row["room_state"])))


def test_image_tables__read_with_pandas_give_a_dict_of_png_bytes_that_decodes_to_rgb_as_loading_md_says():
    import io

    import pandas
    from PIL import Image

    frame = pandas.read_parquet(REPO / IMAGE_TABLES["validation"])
    first = frame.iloc[0]
    assert set(first["image"]) == {"bytes", "path"} and first["image"]["bytes"].startswith(b"\x89PNG")
    picture = np.array(Image.open(io.BytesIO(first["image"]["bytes"])))
    assert picture.shape == (96, 96, 3)
    assert np.array_equal(picture, sf.render_rgb(np.array(first["room_fixed"].tolist()),
                                                 np.array(first["room_state"].tolist())))
    loading = (REPO / "docs" / "loading.md").read_text(encoding="utf-8")
    assert ('| pandas (`pd.read_parquet`), pyarrow, DuckDB | a dict, `{"bytes": b"\\x89PNG...", "path": None}`'
            in loading)
    assert "`np.array(row[\"image\"])`: (96, 96, 3) uint8" in loading


def test_image_tables__are_pinned_with_their_sha256_rows_and_size():
    for split, name in IMAGE_TABLES.items():
        data = (REPO / name).read_bytes()
        assert sokoban_pins.IMAGE_TABLES[name] == {"sha256": hashlib.sha256(data).hexdigest(),
                                                   "rows": len(file_rows(SPLITS[split])), "bytes": len(data)}


def test_image_tables__reproduce_byte_for_byte_in_a_fresh_process_with_another_hash_seed():
    # the tables as the card makes them, from the published files' checked rows (the card's other
    # outputs are test_card's)
    program = ("import hashlib, json; from sokoban_tools.layout import CONFIGURATIONS; "
               "from sokoban_tools.pipeline.publish import card, image_tables; "
               "rows = {}; card.published_files(card.REPO, rows); "
               "tables = image_tables.image_tables({split: rows[name] for split, name in "
               "CONFIGURATIONS['fairness'].items()}); "
               "print(json.dumps({name: hashlib.sha256(data).hexdigest() for name, data in tables.items()}))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONHASHSEED": "2024"}, check=True)
    digests = json.loads(done.stdout)
    assert digests == {name: hashlib.sha256((REPO / name).read_bytes()).hexdigest() for name in IMAGE_TABLES.values()}


def test_image_tables__another_pyarrow_is_refused_naming_the_pin_before_anything_is_written(monkeypatch):
    import pyarrow

    monkeypatch.setattr(pyarrow, "__version__", "1.0.0")
    with pytest.raises(card.CardError, match=rf"written with pyarrow {image_tables.PYARROW}, .* but pyarrow 1\.0\.0 "
                                             r"is installed; install the pinned one"):
        card.build()


def test_image_tables__pyarrow_is_pinned_where_the_pipeline_is_installed():
    test_extra = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]["test"]
    assert f"pyarrow=={image_tables.PYARROW}" in test_extra


def test_card_yaml__keeps_only_the_jsonl_configurations_which_one_builder_reads():
    front = (REPO / "README.md").read_text(encoding="utf-8").split("---")[1]
    assert ".parquet" not in front  # a Parquet configuration beside JSON ones would be read as JSON
    assert sf.SPLIT_FILES == CONFIGURATIONS


@pytest.mark.slow
def test_image_tables__read_by_their_data_files_on_datasets_36(tmp_path):
    python36 = require_venv(DATASETS36)
    program = '''
    import datasets, numpy as np
    datasets.disable_progress_bars()
    sys.path.insert(0, ARGS["repo"])
    from sokoban_fairness import render_rgb
    tables = datasets.load_dataset("parquet", data_files=ARGS["files"], cache_dir=ARGS["cache"])
    out = {}
    for split, part in tables.items():
        with open(ARGS["repo"] + "/" + ARGS["jsonl"][split], encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle]
        first = part[0]
        out[split] = {
            "same_rows": part.remove_columns("image").to_list() == rows,
            "image": type(part.features["image"]).__name__,
            "frame": bool(np.array_equal(np.array(first["image"]),
                                         render_rgb(np.array(first["room_fixed"]), np.array(first["room_state"])))),
        }
    out["version"] = datasets.__version__
    report(out)
    '''
    args = {"repo": REPO, "cache": tmp_path / "cache", "jsonl": SPLITS,
            "files": {split: str(REPO / name) for split, name in IMAGE_TABLES.items()}}
    found = run_client(python36, program, args, env=offline_env(tmp_path / "hf-home"))
    assert found.pop("version") == "3.6.0"
    assert found == {split: {"same_rows": True, "image": "Image", "frame": True} for split in SPLITS}
