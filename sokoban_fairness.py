"""Loading script of the ``sokoban-fairness`` dataset.

It decodes the stored boards into typed columns, optionally adds the ordinary
RGB game image (:func:`render_rgb`, pixel for pixel what the verl-agent Sokoban
environment shows its model in ``rgb_array`` mode), and refuses any data file
that is not a regular file or whose size, SHA-256 or row count differs from
the published one. The Hub serves this
file on its own, so it imports nothing beyond the standard library, numpy
and datasets.

On ``datasets`` <= 3.6, which runs a script given by path only from a local
file (a Hub path ending in ``.py`` fails with "Couldn't find a dataset script")::

    path = snapshot_download("org/sokoban-fairness", repo_type="dataset")
    load_dataset(f"{path}/sokoban_fairness.py", "fairness", trust_remote_code=True)

On later versions, which no longer run scripts, import :class:`SokobanFairness`
and use it directly (see the dataset card).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import zlib

import datasets
import numpy as np

# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------

TILE_SIZE = 16

# Tile artwork from gym-sokoban 0.0.6 (Max-Philipp Schrader, MIT licence),
# files gym_sokoban/envs/surface/*.png, transcribed losslessly: each tile is
# 16 rows of 16 palette keys. The seven tiles use ten colours in all.
_PALETTE = {
    ".": (0, 0, 0),        # black ground
    "#": (176, 61, 0),     # brick
    "+": (176, 154, 142),  # mortar
    "d": (215, 103, 0),    # box wood, dark
    "w": (215, 114, 0),    # box wood
    "y": (215, 196, 0),    # box face
    "r": (238, 0, 0),      # target red
    "o": (239, 22, 22),    # target outline
    "*": (242, 26, 26),    # target centre
    "g": (41, 202, 26),    # player green
}

# Tile i is drawn for gym-sokoban surface id i: 0 wall, 1 floor, 2 target,
# 3 box on target, 4 box, 5 player, 6 player on target.
_TILES = (
    (  # wall
        "#####+######+###", "#####+######+###", "#####+######+###", "#####+######+###",
        "++++++++++++++++", "++++++++++++++++", "###+#######+####", "###+#######+####",
        "###+#######+####", "###+#######+####", "++++++++++++++++", "++++++++++++++++",
        "#####+######+###", "#####+######+###", "#####+######+###", "#####+######+###",
    ),
    ("................",) * 16,  # floor
    (  # target
        "................", ".oooooooooooooo.", ".o............o.", ".o............o.",
        ".o............o.", ".o.....r......o.", ".o....r*r.....o.", ".o...r***r....o.",
        ".o....r*r.....o.", ".o.....r......o.", ".o............o.", ".o............o.",
        ".o............o.", ".o............o.", ".oooooooooooooo.", "................",
    ),
    (  # box on target
        "rrrrrrrrrrrrrrrr", "rrrrrrrrrrrrrrrr", "rrwwyyyyyyyyydrr", "rrywdyyyyyyywwrr",
        "rrywwdyyyyywwyrr", "rryywwwyyywwyyrr", "rryyydwwywwyyyrr", "rryyyydrrdyyyyrr",
        "rryyyydrrdyyyyrr", "rryyyywwywwyyyrr", "rryyywwyywwwyyrr", "rrydwwyyyydwwyrr",
        "rrddwyyyyyydwwrr", "rrwwyyyyyyyydwrr", "rrrrrrrrrrrrrrrr", "rrrrrrrrrrrrrrrr",
    ),
    (  # box
        "ddddwwwwwwwwwwdd", "ddwwyyyyyyyywwwd", "dwwwyyyyyyyyydww", "wwywdyyyyyyywwyw",
        "wyywwdyyyyywwyyw", "wyyywwwyyywwyyyw", "wyyyydwwywwyyyyw", "wyyyyyddddyyyyyw",
        "wyyyyyddddyyyyyw", "wyyyyywwywwyyyyw", "wyyyywwyywwwyyyw", "wwydwwyyyydwwyyw",
        "wwddwyyyyyydwwww", "dwwwyyyyyyyydwwd", "ddwwyyyyyyyywwdd", "dddwwwwwwwwwwddd",
    ),
    (  # player
        "...g........g...", "...gg......gg...", "....gggggggg....", "....gggggggg....",
        "...gg..gg..gg...", "..ggg..gg..ggg..", ".gggggggggggggg.", "gggggggggggggggg",
        "gggggggggggggggg", "gggggggggggggggg", "gggggggggggggggg", "gggggggggggggggg",
        "..gggggggggggg..", "....g......g....", "....g......g....", "....g......g....",
    ),
    (  # player on target
        "...g........g...", ".rrggrrrrrrggrr.", ".r..gggggggg..r.", ".r..gggggggg..r.",
        ".r.gg..gg..gg.r.", ".rggg..gg..gggr.", ".gggggggggggggg.", "gggggggggggggggg",
        "gggggggggggggggg", "gggggggggggggggg", "gggggggggggggggg", "gggggggggggggggg",
        ".rggggggggggggr.", ".r..g......g..r.", ".rrrgrrrrrrgrrr.", "....g......g....",
    ),
)


def _build_index_atlas() -> np.ndarray:
    """Decode the tiles into a read-only (7, 16, 16) array of indices into :data:`PALETTE`."""
    lookup = np.zeros(128, dtype=np.uint8)
    lookup[[ord(k) for k in _PALETTE]] = np.arange(len(_PALETTE))
    codes = np.array([[list(map(ord, row)) for row in tile] for tile in _TILES])
    if codes.shape != (7, TILE_SIZE, TILE_SIZE):
        raise AssertionError(f"tile table has shape {codes.shape}")
    return _read_only(lookup[codes])


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


PALETTE = _read_only(np.array(list(_PALETTE.values()), dtype=np.uint8))  # (10, 3) RGB
_INDEX_ATLAS = _build_index_atlas()
_RGB_ATLAS = _read_only(PALETTE[_INDEX_ATLAS])  # (7, 16, 16, 3)


def _draw(atlas: np.ndarray, room_fixed, room_state) -> np.ndarray:
    """Lay out one ``atlas`` tile per cell: the tile of the cell's ``room_state``
    code, or tile 6 for a player standing on a target of ``room_fixed``."""
    fixed = np.asarray(room_fixed)
    state = np.asarray(room_state)
    if state.ndim != 2 or fixed.shape != state.shape:
        raise ValueError(f"room_fixed {fixed.shape} and room_state {state.shape} must be equal 2-D shapes")
    if state.dtype.kind not in "iu" or (state.size and (state.min() < 0 or state.max() > 5)):
        raise ValueError("room_state codes must be integers in 0..5")
    tile = state + ((state == 5) & (fixed == 2))
    height, width = state.shape
    cells = atlas[tile]  # (H, W, 16, 16, ...)
    return cells.swapaxes(1, 2).reshape(height * TILE_SIZE, width * TILE_SIZE, *atlas.shape[3:])


def render_rgb(room_fixed, room_state) -> np.ndarray:
    """The RGB image gym-sokoban 0.0.6 (``room_to_rgb``) draws for a board.

    ``room_fixed`` (0 wall, 1 floor, 2 target) and ``room_state`` (0 wall, 1 floor,
    2 target, 3 box on target, 4 box, 5 player) are equal-shaped nested lists or
    arrays. Each cell becomes a 16x16 tile chosen by ``room_state``, except that a
    player on a target cell of ``room_fixed`` gets its own tile. Note the argument
    order is the reverse of gym-sokoban's ``room_to_rgb(room_state, room_fixed)``.

    Returns a new (H*16, W*16, 3) uint8 array.
    """
    return _draw(_RGB_ATLAS, room_fixed, room_state)


def render_indices(room_fixed, room_state) -> np.ndarray:
    """The same image as :func:`render_rgb` as (H*16, W*16) uint8 indices into
    :data:`PALETTE`: a third of the bytes, for compact PNGs."""
    return _draw(_INDEX_ATLAS, room_fixed, room_state)


def encode_png(pixels: np.ndarray, palette: np.ndarray | None = None, level: int = 1) -> bytes:
    """A PNG file, without filters or metadata, of an (H, W, 3) uint8 RGB image,
    or of (H, W) uint8 indices into an (N, 3) ``palette`` (N <= 256).

    Written with zlib directly because encoding, not rendering, is what an image
    column costs: this takes a fraction of Pillow's time, and its bytes depend
    only on the pixels, the palette and ``level`` (zlib's 0-9).
    """
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    if palette is None and (pixels.ndim != 3 or pixels.shape[2] != 3):
        raise ValueError(f"expected an (H, W, 3) RGB image, got shape {pixels.shape}")
    if palette is not None and pixels.ndim != 2:
        raise ValueError(f"expected (H, W) palette indices, got shape {pixels.shape}")
    height, width = pixels.shape[:2]
    row_bytes = pixels[0].size
    scanlines = np.zeros((height, 1 + row_bytes), dtype=np.uint8)  # filter byte 0 per row
    scanlines[:, 1:] = pixels.reshape(height, row_bytes)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    colour_type = 2 if palette is None else 3
    parts = [b"\x89PNG\r\n\x1a\n", chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0))]
    if palette is not None:
        parts.append(chunk(b"PLTE", np.ascontiguousarray(palette, dtype=np.uint8).tobytes()))
    parts += [chunk(b"IDAT", zlib.compress(scanlines.tobytes(), level)), chunk(b"IEND", b"")]
    return b"".join(parts)


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
    PUBLISHED_FILES; since a build refuses any other data, equal hashes mean
    equal built data, and a new release (script or data) means a new cache entry.
    """
    with open(__file__, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()[:16]


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
