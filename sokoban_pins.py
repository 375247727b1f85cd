"""The published data files of sokoban-fairness: their release and the SHA-256, rows and size of each.

Written whole by `python -m sokoban_tools card` from the files it has just
checked; do not edit. Changing PUBLISHED_FILES takes a new release (see the
Changelog section of the dataset card). IMAGE_TABLES pins the Parquet files of
the same rows with their game images, derived from them (the card writes both).
HUB_REPO is the dataset's repository on the Hub (sokoban_tools.layout.HUB_REPO_ID).
"""

RELEASE = "1.0.0"
PUBLISHED_FILES = {
    "fairness/train.jsonl": {"sha256": "90b21457a1fe75af38baf18c9d0aabdc5ddba3bae079efde6478218e285f1570", "rows": 5000, "bytes": 1738842},
    "fairness/evaluation.jsonl": {"sha256": "274a8c856514e8fde19180f8abfc358f5163cffe4317d797b7f055516eb8223e", "rows": 256, "bytes": 88666},
    "fairness/evaluation-pool-1000.jsonl": {"sha256": "68ffd38ec5753262b22d36b7e1541b7ff99162670247ce6537b44cee16f050e7", "rows": 1000, "bytes": 346520},
}
IMAGE_TABLES = {
    "fairness/train-images.parquet": {"sha256": "d352a59c5eeb599638ddd3af004b829c9b34b2480f214a53a224af768eceb350", "rows": 5000, "bytes": 3432368},
    "fairness/evaluation-images.parquet": {"sha256": "1bc4b2fc008b00772567b4332196cbaf8f95f1413d993af77c110e9929e6b0dd", "rows": 256, "bytes": 181442},
}
HUB_REPO = "sokoban-fairness/sokoban-fairness"
