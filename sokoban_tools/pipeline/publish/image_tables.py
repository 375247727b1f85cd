"""The boards with their game images as Parquet, for tools that read data files only.

Of the JSONL configurations, a reader without the loading script (``datasets`` 4
and later, pandas, DuckDB, the Hub's file browser) sees ``room_fixed`` as nested
numbers and no board. ``fairness/train-images.parquet`` and
``fairness/evaluation-images.parquet`` hold the rows of the ``fairness``
configuration's two splits, in stored order, every column as the card's YAML
types it, plus ``image``: the initial game image (verl-agent's ``rgb_array``
frame, the loading script's ``with_images`` column) as an RGB PNG. RGB, not the
palette PNG the loading script stores (and decodes as RGB): these files are read
by tools that decode the bytes as they are, and a palette PNG gives Pillow an
image of mode ``P``, whose array is (96, 96) indices, not (96, 96, 3) colours.

They are not a configuration of the card's YAML: ``datasets`` reads every
configuration of a repository with the builder of the first one's files (json
here; datasets issue 7101), so a listed Parquet configuration would not load.
They are read by their data files: ``load_dataset("parquet", data_files=...)``.

Derived data, written by ``python -m sokoban_tools card`` from the JSONL rows it
has just checked and pinned in ``sokoban_pins.py`` (``IMAGE_TABLES``). The bytes
must reproduce, so every writer setting is fixed here, the ``datasets``
features ride in the schema metadata as a fixed literal (not as whichever
``datasets`` is installed would spell them), and pyarrow's version is pinned: a
Parquet footer names the library that wrote it (``created_by``), which no
setting changes, so another pyarrow is refused before anything is written.
"""

from __future__ import annotations

import io
import json

from sokoban_render import encode_png, render_rgb

from ...layout import IMAGE_TABLES
from ...records.rows import COLUMN_TYPES, BoardRow

PYARROW = "26.0.1"  # the version that writes the committed files; the test extra pins it too
ROW_GROUP_ROWS = 1000  # readers page through row groups; 1,000 boards are about 750 kB
PNG_LEVEL = 6  # zlib's default: an RGB frame in about 700 bytes (at level 1, about 1,200)


def _feature(kind: str, depth: int) -> dict:
    """A column's datasets feature, as datasets reads it from the schema metadata."""
    return {"dtype": kind, "_type": "Value"} if depth == 0 else {"feature": _feature(kind, depth - 1),
                                                                 "_type": "Sequence"}


# The JSONL configurations' types (records.rows.COLUMN_TYPES), plus the image.
FEATURES = {**{name: _feature(kind, depth) for name, kind, depth in COLUMN_TYPES}, "image": {"_type": "Image"}}


class ImageTablesUnavailable(ValueError):
    """The image tables cannot be written byte for byte here: pyarrow is missing or another version."""


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ImageTablesUnavailable(f"writing the image tables ({', '.join(IMAGE_TABLES.values())}) needs pyarrow "
                                f"{PYARROW}, which is not installed: pip install -e '.[test]'") from None
    if pyarrow.__version__ != PYARROW:
        raise ImageTablesUnavailable(
            f"the image tables ({', '.join(IMAGE_TABLES.values())}) is written with pyarrow {PYARROW}, whose "
            f"version its footer records, but pyarrow {pyarrow.__version__} is installed; install the pinned one "
            f"(pip install -e '.[test]') so the files reproduce byte for byte")
    return pyarrow, pyarrow.parquet


def image_png(stored: dict) -> bytes:
    """The initial game image of a row as stored, as an RGB PNG."""
    return encode_png(render_rgb(stored["room_fixed"], stored["room_state"]), level=PNG_LEVEL)


def parquet_bytes(rows: list[BoardRow]) -> bytes:
    """One split's image table: ``rows`` in order, with their images."""
    pa, pq = _pyarrow()
    def arrow_type(kind: str, depth: int):
        return getattr(pa, kind)() if depth == 0 else pa.list_(arrow_type(kind, depth - 1))

    schema = pa.schema([
        *((name, arrow_type(kind, depth)) for name, kind, depth in COLUMN_TYPES),
        ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
    ], metadata={"huggingface": json.dumps({"info": {"features": FEATURES}}, sort_keys=True)})
    stored = [json.loads(row.line) for row in rows]  # each column as the JSONL file spells it
    columns = {name: [row[name] for row in stored] for name in schema.names if name != "image"}
    columns["image"] = [{"bytes": image_png(row), "path": None} for row in stored]
    table = pa.Table.from_pydict(columns, schema=schema)
    out = io.BytesIO()
    pq.write_table(table, out, row_group_size=ROW_GROUP_ROWS, version="2.6", use_dictionary=False,
                   compression="snappy", write_statistics=True, data_page_version="1.0", store_schema=True,
                   write_page_index=False, write_page_checksum=False, use_byte_stream_split=False)
    return out.getvalue()


def image_tables(splits: dict[str, list[BoardRow]]) -> dict[str, bytes]:
    """The image table of each split (``{split: rows}``), by its name in the clone."""
    return {IMAGE_TABLES[split]: parquet_bytes(rows) for split, rows in splits.items()}

