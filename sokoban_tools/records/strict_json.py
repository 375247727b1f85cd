"""The one JSON reader of every record file: board rows, episode logs, run manifests.

Python's ``json`` keeps the last of two equal keys in an object, so a row such as
``{"won": false, ..., "won": true}`` would be read as whatever its last writer
meant. Every record is read through :func:`loads`, which refuses it instead.
"""

from __future__ import annotations

import json


def _distinct_keys(pairs: list[tuple[str, object]]) -> dict:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"duplicate key {', '.join(repeated)}")
    return dict(pairs)


def loads(text: str | bytes):
    """``json.loads`` of ``text``, refusing an object with a repeated key (``ValueError``)."""
    return json.loads(text, object_pairs_hook=_distinct_keys)
