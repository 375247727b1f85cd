"""The dataset card and the loading script's checksums agree with the files."""

import hashlib
import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest
from huggingface_hub import DatasetCard

import sokoban_fairness
from conftest import DATA_DIR, REPO
from sokoban_tools import card
from sokoban_tools.artifacts import publish
from sokoban_tools.protocol import stratum_of

README = REPO / "README.md"


@pytest.fixture(scope="module")
def card_text():
    return README.read_text(encoding="utf-8")


def lengths(name):
    return [json.loads(line)["shortest_solution_length"] for line in (DATA_DIR / name).read_text().splitlines()]


def test_card__is_what_the_card_command_writes():
    assert publish(card.build(), check=True, command=card.COMMAND)


def test_loading_script__publishes_each_files_real_sha256_and_rows():
    for name, expected in sokoban_fairness.PUBLISHED_FILES.items():
        data = (REPO / name).read_bytes()
        assert expected == {"sha256": hashlib.sha256(data).hexdigest(), "rows": data.count(b"\n")}, name
    assert sokoban_fairness.PUBLISHED_FILES["fairness/evaluation.jsonl"]["rows"] == 256


def test_card__yaml_splits_count_the_rows_of_their_files():
    data = DatasetCard.load(README).data.to_dict()
    files = {c["config_name"]: {d["split"]: d["path"] for d in c["data_files"]} for c in data["configs"]}
    assert files == card.SPLITS
    for info in data["dataset_info"]:
        for split in info["splits"]:
            path = REPO / files[info["config_name"]][split["name"]]
            assert split["num_examples"] == path.read_bytes().count(b"\n")
            assert split["num_bytes"] == path.stat().st_size


def test_card__states_the_evaluation_files_digest_and_row_count(card_text):
    digest = hashlib.sha256((DATA_DIR / "evaluation.jsonl").read_bytes()).hexdigest()
    assert f"must expect 256 and SHA-256 `{digest}`" in card_text


def test_card__selection_table_counts_boards_in_the_files(card_text):
    source = Counter(stratum_of(n) for n in lengths("evaluation-pool-1000.jsonl"))
    selected = Counter(stratum_of(n) for n in lengths("evaluation.jsonl"))
    for label in ("1-4", "5-8", "9-14"):
        low, high = label.split("-")
        row = re.search(rf"^\| {low}–{high} actions \| (\d+) \| [\d.]+% \| [\d.]+ \| (\d+) \|$", card_text, re.M)
        assert row, f"no table row for {label}"
        assert (int(row.group(1)), int(row.group(2))) == (source[label], selected[label])


def test_card__states_the_length_spans_of_selection_and_pool(card_text):
    selected, pool = lengths("evaluation.jsonl"), lengths("evaluation-pool-1000.jsonl")
    assert (f"the selected lengths span {min(selected)}–{max(selected)} actions, "
            f"while the source pool spans {min(pool)}–{max(pool)}") in card_text


def test_card__pictures_it_shows_exist(card_text):
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", card_text)
    assert pictures and all((REPO / p).is_file() for p in pictures)


def test_card__template_names_only_known_figures():
    with pytest.raises(KeyError, match="no report provides"):
        card.fill("{{ missing }}", {})


def python_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_card__builder_snippet_runs_as_written(card_text, tmp_path):
    snippet = next(block for block in python_blocks(card_text) if "SokobanFairness(" in block)
    (tmp_path / "sokoban-fairness").symlink_to(REPO, target_is_directory=True)
    program = snippet + "\nprint({split: part.num_rows for split, part in ds.items()}, ds['validation'][0]['image'].size)\n"
    env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "{'train': 5000, 'validation': 256} (96, 96)"


def test_cache_hash__is_the_digest_of_the_script_that_pins_the_data_and_of_its_renderer():
    script = (REPO / "sokoban_fairness.py").read_bytes()
    renderer = (REPO / "sokoban_render.py").read_bytes()
    assert sokoban_fairness.cache_hash() == hashlib.sha256(script + renderer).hexdigest()[:16]
    assert b"PUBLISHED_FILES = {" in script
