"""The Parquet files of the boards with their game images, read as a reader of data files
only reads them (``datasets`` without the script, on 5.x and 3.6): the rows of the fairness
configuration, the loading script's very image bytes, pinned, reproducible, and the card's
JSONL configurations untouched."""

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


def test_image_tables__images_are_the_loading_scripts_png_bytes_and_the_game_frame(tables):
    for split, step in (("validation", 1), ("train", 97)):
        raw = tables[split].cast_column("image", datasets.Image(decode=False))
        for index in range(0, raw.num_rows, step):
            row = raw[index]
            assert row["image"]["bytes"] == sf.encode_png(sf.render_indices(row["room_fixed"], row["room_state"]),
                                                          sf.PALETTE)
            decoded = np.asarray(tables[split][index]["image"].convert("RGB"))
            assert np.array_equal(decoded, sf.render_rgb(np.array(row["room_fixed"]), np.array(row["room_state"])))


def test_image_tables__are_pinned_with_their_sha256_rows_and_size():
    for split, name in IMAGE_TABLES.items():
        data = (REPO / name).read_bytes()
        assert sokoban_pins.IMAGE_TABLES[name] == {"sha256": hashlib.sha256(data).hexdigest(),
                                                   "rows": len(file_rows(SPLITS[split])), "bytes": len(data)}


def test_image_tables__reproduce_byte_for_byte_in_a_fresh_process_with_another_hash_seed():
    program = ("import hashlib, json; from sokoban_tools.pipeline.publish import card; "
               "files = card.build(); print(json.dumps({str(p): hashlib.sha256(files[p]).hexdigest() "
               "for p in files if p.suffix == '.parquet'}))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONHASHSEED": "2024"}, check=True)
    digests = json.loads(done.stdout)
    assert digests == {str(REPO / name): hashlib.sha256((REPO / name).read_bytes()).hexdigest()
                       for name in IMAGE_TABLES.values()}


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
            "frame": bool(np.array_equal(np.asarray(first["image"].convert("RGB")),
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
