"""Loading script of the ``sokoban-fairness`` dataset.

It decodes the stored boards into typed columns, optionally adds the ordinary
RGB game image (:func:`render_rgb`, pixel for pixel what the verl-agent Sokoban
environment shows its model in ``rgb_array`` mode), and refuses any data file
that is not a regular file or whose size, SHA-256 or row count differs from
the published one, and any row that is not a board row. The Hub serves this
file with three modules beside it: ``sokoban_render.py`` (the renderer,
standard library and numpy), ``sokoban_pins.py`` (the release and each data
file's digest) and ``sokoban_published.py`` (the file and row checks, shared
with the package); it imports nothing beyond those, datasets and the standard library.

On ``datasets`` <= 3.6, which runs a script given by path only from a local
file (a Hub path ending in ``.py`` fails with "Couldn't find a dataset script")::

    path = snapshot_download("sokoban-fairness/sokoban-fairness", repo_type="dataset")
    load_dataset(f"{path}/sokoban_fairness.py", "fairness", trust_remote_code=True)

On later versions, which no longer run scripts, import :class:`SokobanFairness`
and use it directly (see the dataset card).
"""

from __future__ import annotations

import hashlib
import importlib
import json

import datasets

# ---------------------------------------------------------------------------
# The files beside this script: the renderer, the pins and the file and row checks
# ---------------------------------------------------------------------------

# datasets <= 3.6 runs this script as a module of a package in its cache, copying beside it
# the files the script imports relatively, which it finds by scanning for lines that begin
# with "from ." outside triple-double-quoted strings (indented lines are not seen either).
# These strings are those lines:
_COPIED_BY_DATASETS = '''
from .sokoban_render import render_rgb
from .sokoban_pins import RELEASE
from .sokoban_published import check_published_file
'''
# Imported from a directory on sys.path instead (the builder class on datasets >= 4, or
# the sokoban_tools package), they are the top-level modules beside this file.


def _beside(name: str):
    return importlib.import_module(f".{name}" if __package__ else name, __package__ or None)


_render, _published = _beside("sokoban_render"), _beside("sokoban_published")
PALETTE, TILE_SIZE, encode_png, render_indices, render_rgb = (
    _render.PALETTE, _render.TILE_SIZE, _render.encode_png, _render.render_indices, _render.render_rgb)
RELEASE, PUBLISHED_FILES = _published.RELEASE, _published.PUBLISHED_FILES
ChecksumError, DataError, check_published_file, row_problem = (
    _published.ChecksumError, _published.DataError, _published.check_published_file, _published.row_problem)


def cache_hash() -> str:
    """A ``hash`` for a builder used directly, which caches by name and config only.

    It is the digest of this script, of the pins of every data file's SHA-256,
    and of the renderer that draws the ``image`` column; since a build refuses
    any other data, equal hashes mean equal built data, and a new release
    (script, pins, renderer or data) means a new cache entry.
    """
    digest = hashlib.sha256()
    for path in (__file__, _beside("sokoban_pins").__file__, _published.__file__, _render.__file__):
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:16]


# ---------------------------------------------------------------------------
# The dataset builder
# ---------------------------------------------------------------------------

_DESCRIPTION = (
    "Frozen, solvable 6x6 one-box Sokoban boards for comparing visual-agent training methods: "
    "5,000 training boards and 256 fixed validation boards (protocol sokoban-eval-256-v1)."
)
_HOMEPAGE = "https://huggingface.co/datasets/sokoban-fairness/sokoban-fairness"
_LICENSE = "mit"
_CITATION = """@misc{sokoban_fairness,
  title  = {Sokoban fairness: 5,000 training boards and 256 fixed validation boards},
  year   = {2026},
  howpublished = {Hugging Face dataset sokoban-fairness/sokoban-fairness},
  url    = {https://huggingface.co/datasets/sokoban-fairness/sokoban-fairness},
}"""

TRAIN_FILE = "fairness/train.jsonl"
SPLIT_FILES = {
    "fairness": {"train": TRAIN_FILE, "validation": "fairness/evaluation.jsonl"},
    "source_pool_1000": {"train": TRAIN_FILE, "validation": "fairness/evaluation-pool-1000.jsonl"},
}


class SokobanFairnessConfig(datasets.BuilderConfig):
    """A split layout (``fairness`` or ``source_pool_1000``); ``with_images`` adds
    the 96x96 RGB game image of each initial board as an ``image`` column."""

    def __init__(self, with_images: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.with_images = with_images


def _cell(grid, codes):
    """(row, column) of the one cell of ``grid`` whose code is in ``codes``."""
    return next([r, c] for r, row in enumerate(grid) for c, v in enumerate(row) if v in codes)


class SokobanFairness(datasets.GeneratorBasedBuilder):
    """Sokoban fairness boards, decoded, checksum-verified, optionally rendered."""

    BUILDER_CONFIG_CLASS = SokobanFairnessConfig
    BUILDER_CONFIGS = [
        SokobanFairnessConfig(name="fairness", version=datasets.Version(RELEASE),
                              description="Current protocol: 5,000 training and 256 validation boards."),
        SokobanFairnessConfig(name="source_pool_1000", version=datasets.Version(RELEASE),
                              description="Archive: the 1,000-board source pool as validation."),
    ]
    DEFAULT_CONFIG_NAME = "fairness"

    def _info(self):
        grid = datasets.Sequence(datasets.Sequence(datasets.Value("int8")))
        cell = datasets.Sequence(datasets.Value("int8"), length=2)
        features = {
            "task_id": datasets.Value("string"),
            "seed": datasets.Value("int64"),
            "room_fixed": grid,
            "room_state": grid,
            "xsb": datasets.Value("string"),
            "shortest_solution": datasets.Value("string"),
            "shortest_solution_length": datasets.Value("int32"),
            "player_position": cell,
            "box_position": cell,
            "target_position": cell,
        }
        # datasets sets load_dataset's keyword arguments on the config without calling __init__,
        # so they are checked here, when the builder is made, before any work
        if not isinstance(self.config.with_images, bool):  # "false" is a non-empty string: truthy
            raise TypeError(f"with_images must be True or False, got {self.config.with_images!r}")
        if self.config.with_images:
            features["image"] = datasets.Image(mode="RGB")  # stored as palette PNG
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=datasets.Features(features),
            homepage=_HOMEPAGE,
            license=_LICENSE,
            citation=_CITATION,
        )

    def _split_generators(self, dl_manager):
        # Checked here, before any example is generated, because datasets 3.x
        # wraps errors raised in _generate_examples in a generic
        # DatasetGenerationError; raised here, the user's last line names the
        # file, the expected and found digests and the fix.
        if self.config.with_images:
            try:
                import PIL  # noqa: F401  (datasets stores and decodes the image column with it)
            except ImportError:
                raise ImportError(
                    "with_images=True needs Pillow, which datasets uses to store the image column; "
                    "install it with `pip install pillow`, or load without with_images."
                ) from None
        names = SPLIT_FILES[self.config.name]
        paths = dl_manager.download(names)
        # Each file is read and hashed once; generating decodes the bytes checked here.
        self._checked = {paths[split]: check_published_file(paths[split], name) for split, name in names.items()}
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"path": paths[split], "name": names[split]})
            for split in names
        ]

    def _generate_examples(self, path, name):
        checked = getattr(self, "_checked", {})
        data = checked.pop(path) if path in checked else check_published_file(path, name)
        for index, line in enumerate(data.decode("utf-8").splitlines()):
            row = json.loads(line)
            problem = row_problem(row)
            if problem:  # only a file whose pin was changed by hand gets here
                raise DataError(f"{name}:{index + 1}: {problem}; download the published file again")
            row["player_position"] = _cell(row["room_state"], (5,))
            row["box_position"] = _cell(row["room_state"], (3, 4))
            row["target_position"] = _cell(row["room_fixed"], (2,))
            if self.config.with_images:
                png = encode_png(render_indices(row["room_fixed"], row["room_state"]), PALETTE)
                row["image"] = {"bytes": png, "path": None}
            yield index, row
