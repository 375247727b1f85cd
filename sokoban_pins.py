"""The published data files of sokoban-fairness: their release and the SHA-256, rows and size of each.

Written whole by `python -m sokoban_tools card` from the files it has just
checked; do not edit. Changing PUBLISHED_FILES takes a new release (see the
Changelog section of the dataset card). IMAGE_TABLES pins the Parquet files of
the same rows with their game images, derived from them (the card writes both).
"""

RELEASE = "1.0.0"
PUBLISHED_FILES = {
    "fairness/train.jsonl": {"sha256": "90b21457a1fe75af38baf18c9d0aabdc5ddba3bae079efde6478218e285f1570", "rows": 5000, "bytes": 1738842},
    "fairness/evaluation.jsonl": {"sha256": "274a8c856514e8fde19180f8abfc358f5163cffe4317d797b7f055516eb8223e", "rows": 256, "bytes": 88666},
    "fairness/evaluation-pool-1000.jsonl": {"sha256": "68ffd38ec5753262b22d36b7e1541b7ff99162670247ce6537b44cee16f050e7", "rows": 1000, "bytes": 346520},
}
IMAGE_TABLES = {
    "fairness/train-images.parquet": {"sha256": "e7076ecf11eb92a91af1f681307fffcf91d325e701e127eed3f9f272087ad6a1", "rows": 5000, "bytes": 3943838},
    "fairness/evaluation-images.parquet": {"sha256": "f9b218eac08946effba510401838e39087796add7e558768754be010a55d7326", "rows": 256, "bytes": 206878},
}
