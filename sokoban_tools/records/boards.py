"""Where a trainer's boards come from: a local copy of the dataset, or the Hub at the pinned release.

A trainer who ran ``pip install`` has the runtime and scoring but no ``fairness/``
folder: site-packages holds none. So the board files are found in this order:

* ``dataset_dir`` when given: a local copy of the dataset repository (it holds
  ``fairness/train.jsonl`` and ``fairness/evaluation.jsonl``); a missing folder or
  file is named as missing;
* ``hub_revision`` when given: that revision (tag, branch or commit) of the dataset
  repository on the Hub, downloaded once into huggingface_hub's cache;
* otherwise the clone the package runs from, if it runs from one (``pip install -e .``),
  else the Hub at :data:`RELEASE_REVISION`, the tag of the release whose digests
  this package pins (``v`` + ``RELEASE``).

Whichever the source, the file must be the published one: its size, SHA-256 and
row count are checked against the pins before a row is parsed, and only a file that
fails that check is refused with "download again".
"""

from __future__ import annotations

import os
from pathlib import Path

from sokoban_published import PUBLISHED_FILES, RELEASE

from ..layout import HUB_REPO_ID, ROOT
from .rows import BoardRow
from .tasks import load_tasks

RELEASE_REVISION = f"v{RELEASE}"  # the Hub tag of the release this package pins


class BoardsNotFound(FileNotFoundError):
    """A board file that is not where it was looked for (folder, file, or Hub revision)."""


def board_file(name: str, dataset_dir: Path | str | None = None, hub_revision: str | None = None,
               cache_first: bool = False) -> Path:
    """The local path of the published file ``name`` (e.g. ``fairness/evaluation.jsonl``),
    from the source chosen as the module docstring says; not yet checked."""
    if name not in PUBLISHED_FILES:
        raise ValueError(f"{name!r} is not a published file; expected one of {', '.join(PUBLISHED_FILES)}")
    if dataset_dir is not None and (isinstance(dataset_dir, bool) or not isinstance(dataset_dir, (str, os.PathLike))):
        raise TypeError(f"dataset_dir must be a folder path (str or os.PathLike), got {dataset_dir!r}")
    if hub_revision is not None and (not isinstance(hub_revision, str) or not hub_revision.strip()):
        raise ValueError(f"hub_revision must be a non-empty string naming a Hub tag, branch or commit "
                         f"(e.g. {RELEASE_REVISION!r}), got {hub_revision!r}")
    if dataset_dir is not None and hub_revision is not None:
        raise ValueError("give dataset_dir (a local copy) or hub_revision (a Hub revision), not both")
    if dataset_dir is not None:
        return _local_file(Path(dataset_dir), name)
    if hub_revision is None and runs_from_clone():
        return _local_file(ROOT, name)
    return _hub_file(name, RELEASE_REVISION if hub_revision is None else hub_revision, cache_first)


def board_source(dataset_dir: Path | str | None = None, hub_revision: str | None = None) -> dict:
    """Where :func:`board_file` reads with these arguments, as a run manifest records it
    (``{"folder": absolute path}`` or ``{"hub_repo": id, "hub_revision": revision}``), so the
    run's log is scored from the same place without being told again."""
    if dataset_dir is not None:
        return {"folder": os.path.abspath(dataset_dir)}
    if hub_revision is None and runs_from_clone():
        return {"folder": str(ROOT)}
    return {"hub_repo": HUB_REPO_ID, "hub_revision": RELEASE_REVISION if hub_revision is None else hub_revision}


def board_file_from(name: str, source: dict) -> Path:
    """The file ``name`` from a manifest's :func:`board_source`; from the Hub, the local
    cache is tried first, so a log whose boards were downloaded once scores offline."""
    if "folder" in source:
        return _local_file(Path(source["folder"]), name)
    if source["hub_repo"] != HUB_REPO_ID:
        raise BoardsNotFound(f"the run read its boards from the Hub dataset {source['hub_repo']}, not "
                             f"{HUB_REPO_ID}: give a copy of its {name} with --evaluation")
    return board_file(name, hub_revision=source["hub_revision"], cache_first=True)


def runs_from_clone() -> bool:
    """Whether the package runs from a clone, which holds the pipeline the wheel leaves out."""
    return (ROOT / "sokoban_tools" / "pipeline").is_dir()


def load_boards(name: str, dataset_dir: Path | str | None = None,
                hub_revision: str | None = None) -> tuple[list[BoardRow], str]:
    """The checked rows of the published file ``name`` and its SHA-256 (see :func:`board_file`)."""
    path = board_file(name, dataset_dir, hub_revision)
    return load_tasks(path, name), PUBLISHED_FILES[name]["sha256"]


def _local_file(folder: Path, name: str) -> Path:
    if not folder.is_dir():
        state = "is not a folder" if folder.exists() else "does not exist"
        raise BoardsNotFound(f"the board folder {folder} {state}: give a local copy of the dataset repository "
                             f"(it holds {name}), or none to download the boards from the Hub")
    path = folder / name
    if not path.exists():
        raise BoardsNotFound(f"{name} is missing from the board folder {folder}: it must be a copy of the "
                             f"dataset repository, with {', '.join(PUBLISHED_FILES)}")
    return path


def _hub_file(name: str, revision: str, cache_first: bool = False) -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (EntryNotFoundError, LocalEntryNotFoundError, RepositoryNotFoundError,
                                        RevisionNotFoundError)

    where = f"{name} at revision {revision!r} of the Hub dataset {HUB_REPO_ID}"
    if cache_first:
        try:
            return Path(hf_hub_download(HUB_REPO_ID, name, repo_type="dataset", revision=revision,
                                        local_files_only=True))
        except LocalEntryNotFoundError:
            pass  # not cached: download it
    try:
        return Path(hf_hub_download(HUB_REPO_ID, name, repo_type="dataset", revision=revision))
    except LocalEntryNotFoundError:
        raise BoardsNotFound(f"{where} is not in the local Hugging Face cache and cannot be downloaded now "
                             f"(offline, or the Hub is unreachable): download it once while online, or give a "
                             f"local copy of the dataset repository") from None
    except RevisionNotFoundError:
        raise BoardsNotFound(f"{where}: the repository has no such revision (a tag, branch or commit); "
                             f"the release this package pins is {RELEASE_REVISION!r}") from None
    except RepositoryNotFoundError:  # what the Hub answers for an unknown revision of some repositories too
        raise BoardsNotFound(f"{where}: the Hub knows no such repository or revision (or it is private): "
                             f"the release this package pins is the tag {RELEASE_REVISION!r}, which the "
                             f"release steps push; give a revision the repository has, or a local copy of "
                             f"the dataset repository") from None
    except EntryNotFoundError:
        raise BoardsNotFound(f"{where}: that revision has no such file") from None
