"""Published data files are a release: their pinned digests change only on purpose.

``sokoban_pins.py``, beside the loading script, pins the release (``RELEASE``)
and the SHA-256, rows and size of every data file (``PUBLISHED_FILES``);
``python -m sokoban_tools card`` writes it. Regenerating is meant to reproduce
those files byte for byte, so a data file that now differs from its pinned
entry (a changed generator, say) is refused with both digests, unless the run
is declared a new release (``--new-release``, which ``python -m sokoban_tools
reproduce`` passes on to the card), and a new release is refused unless the
card's Changelog section has an entry for it above the pinned one. Users thus
never meet re-pinned data without a version and a line saying what changed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

FLAG = "--new-release"
COMMAND = f"python -m sokoban_tools reproduce {FLAG}"
NOT_WITH_CHECK = f"{FLAG} pins a new release, --check changes nothing; give one of them"
CHANGELOG_HEADING = "## Changelog"
# An entry: "- **MAJOR.MINOR.PATCH** — what changed", newest first.
ENTRY = re.compile(r"^- \*\*(\d+\.\d+\.\d+)\*\* \S", re.M)


class ReleaseError(ValueError):
    """Published data changed without a release, or a release lacks its changelog entry."""


@dataclass(frozen=True)
class Release:
    """A release as ``sokoban_pins.py`` pins it."""

    version: str
    files: dict[str, dict]  # data file -> {"sha256", "rows", "bytes"}


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def pinned_release(text: str, script: Path) -> Release:
    """The ``RELEASE`` and ``PUBLISHED_FILES`` assignments of the pins module ``script``
    (whose ``text`` is given), read as literals: it is data, never run."""
    values = {}
    try:
        for statement in ast.parse(text).body:
            if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
                values[statement.targets[0].id] = ast.literal_eval(statement.value)
    except (SyntaxError, ValueError) as err:
        raise ReleaseError(f"{script}: does not parse ({err}); restore it from git") from None
    missing = [name for name in ("RELEASE", "PUBLISHED_FILES") if name not in values]
    if missing:
        raise ReleaseError(f"{script}: lacks {', '.join(missing)}; restore it from git")
    return Release(values["RELEASE"], values["PUBLISHED_FILES"])


def changelog_versions(template: str, path: Path) -> list[str]:
    """The release versions of the Changelog section of the card template ``template``
    (read from ``path``), newest first; refused unless strictly descending."""
    start = template.find(f"\n{CHANGELOG_HEADING}\n")
    if start < 0:
        raise ReleaseError(f"{path}: has no '{CHANGELOG_HEADING}' section; every release needs its entry there")
    section = template[start + 1:]
    end = section.find("\n## ")
    versions = ENTRY.findall(section if end < 0 else section[:end])
    if not versions:
        raise ReleaseError(f"{path}: the {CHANGELOG_HEADING} section has no entry of the form "
                           f"'- **1.0.0** — what changed'")
    for newer, older in zip(versions, versions[1:]):
        if version_key(newer) <= version_key(older):
            raise ReleaseError(f"{path}: changelog entries must be newest first with distinct versions, "
                               f"but {newer} comes before {older}")
    return versions


def _changes(pinned: Release, files: dict[str, dict]) -> list[str]:
    """One sentence per published data file whose pinned entry ``files`` no longer matches."""
    changes = []
    for name in dict.fromkeys([*pinned.files, *files]):
        old, new = pinned.files.get(name), files.get(name)
        if old == new:
            continue
        if old is None or new is None:
            changes.append(f"{name} is {'new' if old is None else 'no longer published'}")
        else:
            rows = f", {old['rows']:,} -> {new['rows']:,} rows" if old["rows"] != new["rows"] else ""
            changes.append(f"{name} changed: SHA-256 {old['sha256']} in release {pinned.version}, "
                           f"{new['sha256']} regenerated{rows}")
    return changes


def release_to_pin(pinned: Release, files: dict[str, dict], changelog: list[str], new_release: bool,
                   changelog_path: Path) -> str:
    """The version to pin beside ``files``: the pinned one when nothing changed, the
    changelog's newest entry for a declared new release; otherwise :class:`ReleaseError`."""
    changes, newest = _changes(pinned, files), changelog[0]
    if not new_release:
        if changes:
            raise ReleaseError(
                "; ".join(changes) + f". Published files are frozen: if the change is meant, add an entry "
                f"for the new release above {pinned.version} to the {CHANGELOG_HEADING} section of "
                f"{changelog_path} and run `{COMMAND}`; if not, restore the release's files "
                f"(git checkout -- fairness/) and find what changed the generator")
        if newest != pinned.version:
            raise ReleaseError(f"{changelog_path}: the newest changelog entry is {newest}, but sokoban_pins.py "
                               f"pins release {pinned.version}; a changelog entry comes with a new "
                               f"release of the data (`{COMMAND}`), so remove it or release")
        return pinned.version
    if not changes:
        raise ReleaseError(f"{FLAG}: no published data file differs from release {pinned.version}, so there "
                           f"is nothing to release; run without {FLAG}")
    if version_key(newest) <= version_key(pinned.version):
        raise ReleaseError(
            f"{FLAG}: {changelog_path} has no changelog entry for the new release: its newest entry is "
            f"{newest}, the pinned release is {pinned.version}; add '- **<new version>** — what changed' "
            f"above it in the {CHANGELOG_HEADING} section (" + "; ".join(changes) + ")")
    return newest
