"""Where everything lives: the clone, the published files and their names, spelled once.

Every module that reads or writes a file of the repository takes its name from
here. The loading script ``sokoban_fairness.py`` stays standalone and keeps
its own spelling of the data files; a test checks that the two agree.

The pipeline, which writes the published files, works on the files beside
the package in a clone; from a wheel, ``ROOT`` is site-packages, which holds
none of them. Standard library only, since the selector imports it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the clone, when the package runs from one

# Where the dataset lives: its repository on the Hugging Face Hub. A release setting, set once by the
# maintainer who publishes it; `reproduce` writes it into the card, the pages and the pins (the download
# advice of sokoban_published.py), and the card step refuses a loading script whose homepage and citation
# name another (the script spells it itself, standalone).
HUB_REPO_ID = "sokoban-fairness/sokoban-fairness"
HUB_URL = f"https://huggingface.co/datasets/{HUB_REPO_ID}"

# The published data: folder, board files (glossary: training pool, source pool,
# validation set) and the reports written beside them.
DATA_FOLDER = "fairness"
DATA_DIR = ROOT / DATA_FOLDER
TRAIN_FILE = "train.jsonl"
SOURCE_POOL_FILE = "evaluation-pool-1000.jsonl"
VALIDATION_FILE = "evaluation.jsonl"  # the validation set, selected from the source pool
GENERATION_AUDIT_FILE = "source-pool-summary.json"  # seeds, rejections, SHA-256 of both pools
SELECTION_FILE = "evaluation-256.selection.json"
TUNING_SELECTION_FILE = "tuning-256.selection.json"  # the tuning split: training boards held out for tuning runs
SUMMARY_FILE = "summary.json"
VERIFICATION_FILE = "verification.json"  # of the validation set
SOURCE_POOL_VERIFICATION_FILE = "source-pool-verification.json"  # of training and source pool
BASELINES_FILE = "baselines.json"
# The pools' keys inside the generation audit.
TRAINING_POOL_NAME = "train"
SOURCE_POOL_NAME = "source_pool"


def published(file: str) -> str:
    """A file of the data folder as the loading script names it, relative to the clone
    (``"fairness/evaluation.jsonl"``)."""
    return f"{DATA_FOLDER}/{file}"


TRAIN_DATA = published(TRAIN_FILE)
SOURCE_POOL_DATA = published(SOURCE_POOL_FILE)
VALIDATION_DATA = published(VALIDATION_FILE)
# Configuration -> split -> data file, as the loading script's SPLIT_FILES (a test keeps them equal).
CONFIGURATIONS = {
    "fairness": {"train": TRAIN_DATA, "validation": VALIDATION_DATA},
    "source_pool_1000": {"train": TRAIN_DATA, "validation": SOURCE_POOL_DATA},
}
# The rows of ``fairness`` with their game images, as Parquet (split: file), for readers of data files only.
IMAGE_TABLES = {"train": published("train-images.parquet"), "validation": published("evaluation-images.parquet")}

# The files at the top of the clone, and the card's pictures.
LOADING_SCRIPT = "sokoban_fairness.py"
PINS = "sokoban_pins.py"  # the release and every data file's digest, beside the loading script
CARD = "README.md"
DATA_README = published("README.md")
BENCHMARKS = "BENCHMARKS.md"
SELECTOR = "select_evaluation_256.py"
IMAGES_FOLDER = "images"
BOARD_SHEET_IMAGE = f"{IMAGES_FOLDER}/validation-boards.png"
REPLAY_IMAGE = f"{IMAGES_FOLDER}/replay.png"
LENGTHS_IMAGE = f"{IMAGES_FOLDER}/solution-lengths.png"
BASELINES_IMAGE = f"{IMAGES_FOLDER}/random-policy-success.png"
LEARNING_CURVES_IMAGE = f"{IMAGES_FOLDER}/learning-curves.png"
LAST_UPDATE_IMAGE = f"{IMAGES_FOLDER}/comparison-last-update.png"  # the worked example's last update, per stratum
RESULTS_IMAGE = f"{IMAGES_FOLDER}/results.png"
TRAINING_IMAGE = f"{IMAGES_FOLDER}/training-curves.png"  # the training runs against env steps: median over seeds, range band
TRAINING_CPU_IMAGE = f"{IMAGES_FOLDER}/training-curves-cpu.png"  # the same runs against CPU-seconds
# The pages the card links for what a visitor reads after it, each written from a card template of the same name.
DOCS_FOLDER = "docs"
DOC_PAGES = tuple(f"{DOCS_FOLDER}/{page}.md" for page in ("loading", "runtime", "scoring", "results", "evaluating",
                                                          "inspect", "vagen", "gymnasium", "gem", "training", "trl",
                                                          "statistics", "reproducing"))
# The Hub's benchmark file at the top of the repository (sokoban_tools.evaluation.hub_benchmark writes its text).
EVAL_YAML = "eval.yaml"
# The worked example: its scripts, linked from the docs pages, and the logs it scores.
EXAMPLE = "examples/play_validation_board.py"
RUNTIME_EXAMPLE = "examples/verl_agent_runtime.py"
EXAMPLE_EPISODES = ROOT / "examples" / "episodes"
# The committed training runs, ten seeds of each method of sokoban_tools.training.methods, as `train --publish`
# wrote them: each run's validation passes and manifest.
TRAINING_RUNS = "examples/training"
TRAINING_SEEDS = tuple(range(10))
# The results table: one folder per entry; the pipeline writes its own baseline entries, submitters add others.
RESULTS_FOLDER = "results"
RESULTS_DIR = ROOT / RESULTS_FOLDER
BASELINE_ENTRIES = ("optimal", "random-policy", "path-follower")
REAL_MODEL_ENTRY = "smollm2-135m-text"  # a real model on a real server, the text turn's worked example
