"""Loading script of the ``sokoban-fairness`` dataset.

It decodes the stored boards into typed columns, optionally adds the ordinary
RGB game image (:func:`render_rgb`, pixel for pixel what the verl-agent Sokoban
environment shows its model in ``rgb_array`` mode), and refuses any data file
that is not a regular file or whose size, SHA-256 or row count differs from
the published one. The Hub serves this file with ``sokoban_render.py`` beside
it (the renderer, standard library and numpy only), so it imports nothing
beyond the standard library, datasets and that file.

On ``datasets`` <= 3.6, which runs a script given by path only from a local
file (a Hub path ending in ``.py`` fails with "Couldn't find a dataset script")::

    path = snapshot_download("org/sokoban-fairness", repo_type="dataset")
    load_dataset(f"{path}/sokoban_fairness.py", "fairness", trust_remote_code=True)

On later versions, which no longer run scripts, import :class:`SokobanFairness`
and use it directly (see the dataset card).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import stat

import datasets

# ---------------------------------------------------------------------------
# Rendering: sokoban_render.py, which ships beside this script
# ---------------------------------------------------------------------------

# datasets <= 3.6 runs this script as a module of a package in its cache, copying beside it
# the files the script imports relatively, which it finds by scanning for lines that begin
# with "from ." outside triple-double-quoted strings (indented lines are not seen either).
# This string is that line:
_COPIED_BY_DATASETS = '''
from .sokoban_render import render_rgb
'''
# Imported from a directory on sys.path instead (the builder class on datasets >= 4, or
# the sokoban_tools package), the renderer is the top-level module beside this file.
_render = importlib.import_module(".sokoban_render" if __package__ else "sokoban_render", __package__ or None)
PALETTE, TILE_SIZE, encode_png, render_indices, render_rgb = (
    _render.PALETTE, _render.TILE_SIZE, _render.encode_png, _render.render_indices, _render.render_rgb)


# ---------------------------------------------------------------------------
# Published files
# ---------------------------------------------------------------------------

# BEGIN PUBLISHED FILES (written by `python -m sokoban_tools.card`; do not edit)
RELEASE = "1.0.0"  # see the Changelog section of the dataset card
PUBLISHED_FILES = {
    "fairness/train.jsonl": {"sha256": "90b21457a1fe75af38baf18c9d0aabdc5ddba3bae079efde6478218e285f1570", "rows": 5000, "bytes": 1738842},
    "fairness/evaluation.jsonl": {"sha256": "274a8c856514e8fde19180f8abfc358f5163cffe4317d797b7f055516eb8223e", "rows": 256, "bytes": 88666},
    "fairness/evaluation-pool-1000.jsonl": {"sha256": "68ffd38ec5753262b22d36b7e1541b7ff99162670247ce6537b44cee16f050e7", "rows": 1000, "bytes": 346520},
}
# END PUBLISHED FILES


def cache_hash() -> str:
    """A ``hash`` for a builder used directly, which caches by name and config only.

    It is the digest of this script, which pins every data file's SHA-256 in
    PUBLISHED_FILES, and of the renderer that draws the ``image`` column; since
    a build refuses any other data, equal hashes mean equal built data, and a
    new release (script, renderer or data) means a new cache entry.
    """
    digest = hashlib.sha256()
    for path in (__file__, _render.__file__):
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:16]


class ChecksumError(ValueError):
    """A data file that is not the published one: stale, truncated or tampered."""


_CHUNK = 1 << 20  # bytes hashed at a time


def _download_again(name: str) -> str:
    return (
        f'Download the current file again, e.g. load_dataset(..., download_mode="force_redownload") '
        f"or `hf download org/sokoban-fairness {name} --repo-type dataset --force-download`."
    )


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a special file"


def check_published_file(path, name: str) -> bytes:
    """The bytes of ``path``, after checking them against the published size,
    SHA-256 and row count of the dataset file ``name`` (e.g. ``fairness/evaluation.jsonl``).

    What ``path`` resolves to must be a regular file of exactly the published
    size, checked before a byte is read, so a FIFO, a device or a huge file is
    refused at once instead of hanging or exhausting memory; then it is hashed
    in chunks.
    """
    if name not in PUBLISHED_FILES:
        raise ChecksumError(f"{name} is not a published file of sokoban-fairness")
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"the path of {name} must be a str or os.PathLike file path, not {path!r}")
    expected = PUBLISHED_FILES[name]
    try:
        # Non-blocking, so that opening a FIFO returns at once; fstat then describes
        # what was opened (through any symlink), so nothing can swap it in between.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise ChecksumError(f"{name} ({path}) cannot be read ({err.strerror}). {_download_again(name)}") from None
    status = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(status.st_mode):
        problem = (f"is not a regular file but {_file_kind(status.st_mode)} (it resolves to "
                   f"{os.path.realpath(path)}); the published file is a regular file of "
                   f"{expected['bytes']:,} bytes")
    elif status.st_size != expected["bytes"]:
        problem = (f"is not the published file: expected {expected['bytes']:,} bytes "
                   f"(SHA-256 {expected['sha256']}), found {status.st_size:,} bytes. "
                   f"It is stale, truncated or modified")
    if problem:
        os.close(fd)
        raise ChecksumError(f"{name} ({path}) {problem}. {_download_again(name)}")
    with os.fdopen(fd, "rb") as handle:
        digest, chunks, size = hashlib.sha256(), [], 0
        # At most one chunk past the published size, even if the file grew since fstat.
        while size <= expected["bytes"] and (chunk := handle.read(_CHUNK)):
            digest.update(chunk)
            chunks.append(chunk)
            size += len(chunk)
    data = b"".join(chunks)
    digest, rows = digest.hexdigest(), data.count(b"\n")
    if len(data) != expected["bytes"] or digest != expected["sha256"] or rows != expected["rows"]:
        raise ChecksumError(
            f"{name} ({path}) is not the published file: expected SHA-256 {expected['sha256']} "
            f"and {expected['rows']} rows, found SHA-256 {digest} and {rows} rows. "
            f"It is stale, truncated or modified. {_download_again(name)}"
        )
    return data


# ---------------------------------------------------------------------------
# The dataset builder
# ---------------------------------------------------------------------------

_DESCRIPTION = (
    "Frozen, solvable 6x6 one-box Sokoban boards for comparing visual-agent training methods: "
    "5,000 training boards and 256 fixed validation boards (protocol sokoban-eval-256-v1)."
)
_HOMEPAGE = "https://huggingface.co/datasets/org/sokoban-fairness"
_LICENSE = "mit"
_CITATION = """@misc{sokoban_fairness,
  title  = {Sokoban fairness: 5,000 training boards and 256 fixed validation boards},
  year   = {2026},
  howpublished = {Hugging Face dataset org/sokoban-fairness},
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
        for split, name in names.items():
            check_published_file(paths[split], name)
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"path": paths[split], "name": names[split]})
            for split in names
        ]

    def _generate_examples(self, path, name):
        data = check_published_file(path, name)
        for index, line in enumerate(data.decode("utf-8").splitlines()):
            row = json.loads(line)
            row["player_position"] = _cell(row["room_state"], (5,))
            row["box_position"] = _cell(row["room_state"], (3, 4))
            row["target_position"] = _cell(row["room_fixed"], (2,))
            if self.config.with_images:
                png = encode_png(render_indices(row["room_fixed"], row["room_state"]), PALETTE)
                row["image"] = {"bytes": png, "path": None}
            yield index, row
