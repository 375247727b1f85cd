"""Where the repository-bound commands find the clone they read and rewrite.

The commands that write the published files (``reproduce``, ``pools``, the
selector, ``summary``, ``verify``, ``card``) work on the files beside the
package: they run from a clone, installed with ``pip install -e .``. A trainer
who installs the wheel gets the runtime only, and the package then sits in
site-packages, where those files do not exist; :func:`outside_clone` turns
that into one line saying so, instead of a missing-file traceback.
Standard library only, since the selector imports it through ``artifacts``.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the clone, when the package runs from one
PROJECT_MARKER = 'name = "sokoban-fairness"'  # in the clone's pyproject.toml, never in site-packages
HOW_TO_CLONE = "clone the repository and run `pip install -e .` in it"


def is_clone(root: Path) -> bool:
    """Whether ``root`` is a clone of this repository (its pyproject.toml names the project)."""
    try:
        return PROJECT_MARKER in (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return False


def outside_clone(paths, root: Path = ROOT, command: str = "this command") -> str | None:
    """Why ``command`` may not touch ``paths``: some lie under ``root`` (the default
    locations, beside the package) but ``root`` is no clone; ``None`` otherwise.
    Paths given explicitly elsewhere (``--data-dir``) are the user's own."""
    if is_clone(root) or not any(Path(path).resolve().is_relative_to(root) for path in paths):
        return None
    return (f"{command} runs from a clone of sokoban-fairness, whose files it reads and rewrites, but "
            f"sokoban_tools is installed in {root}, which has none (a wheel holds the runtime only); "
            f"{HOW_TO_CLONE}")
