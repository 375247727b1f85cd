"""The folder tree reads as the pipeline, and no module imports a later stage.

generate -> select -> verify -> load and play -> score -> publish: each
sub-package of ``sokoban_tools`` is one stage, the top-level modules beside
them (layout, artifacts, protocol) are what every stage shares, and the
commands at the top (``__main__`` and the short command names) drive them all.
The selector is the top-level script between generating and verifying.
"""

from __future__ import annotations

import ast

from conftest import REPO

# In pipeline order: a module may import its own stage and earlier ones only.
STAGES = ("shared", "rules", "data", "selection", "verification", "runtime", "evaluation", "publish", "commands")
SHARED = {"sokoban_tools", "sokoban_tools.layout", "sokoban_tools.artifacts", "sokoban_tools.protocol"}
SELECTOR = "select_evaluation_256"


def stage_of(module: str) -> str:
    """The stage of a module of this repository, by where it lives."""
    if module == SELECTOR:
        return "selection"
    if module in SHARED:
        return "shared"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else "commands"


def imported_modules(source: str, module: str, is_package: bool) -> set[str]:
    """Every module of this repository that ``source`` (the text of ``module``) imports,
    at any depth, relative imports resolved."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}  # `from . import card`
    return {name for name in found if name == SELECTOR or name.split(".")[0] == "sokoban_tools"}


def violations(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """``module imports later-stage module`` for each import that goes against the pipeline."""
    modules = set(sources)
    out = []
    for module, (source, is_package) in sorted(sources.items()):
        for name in sorted(imported_modules(source, module, is_package)):
            if name in modules and STAGES.index(stage_of(name)) > STAGES.index(stage_of(module)):
                out.append(f"{module} ({stage_of(module)}) imports {name} ({stage_of(name)})")
    return out


def repository_sources() -> dict[str, tuple[str, bool]]:
    sources = {SELECTOR: ((REPO / f"{SELECTOR}.py").read_text(encoding="utf-8"), False)}
    for path in (REPO / "sokoban_tools").rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        sources[module] = (path.read_text(encoding="utf-8"), is_package)
    return sources


def test_stages__every_module_lives_in_a_known_stage():
    sources = repository_sources()
    sub_packages = {p.name for p in (REPO / "sokoban_tools").iterdir() if (p / "__init__.py").is_file()}
    assert sub_packages == set(STAGES) - {"shared", "selection", "commands"}
    commands = sorted(m for m in sources if stage_of(m) == "commands")
    # Only the driver and the short command names sit at the top, beside the shared modules.
    assert commands == ["sokoban_tools.__main__", *(f"sokoban_tools.{name}" for name in
                        ("baselines", "card", "compare", "example_policies", "pools", "score", "summary", "verify"))]


def test_stages__no_module_imports_a_later_stage():
    sources = repository_sources()
    assert len(sources) > 30
    assert violations(sources) == []


def test_stages__the_check_sees_a_later_import_at_any_depth_and_relative():
    sources = repository_sources()
    sources["sokoban_tools.runtime.env"] = ("def render():\n    from ..publish import card\n", False)
    sources["sokoban_tools.rules.board"] = ("import sokoban_tools.data.records\n", False)
    assert violations(sources) == [
        "sokoban_tools.rules.board (rules) imports sokoban_tools.data.records (data)",
        "sokoban_tools.runtime.env (runtime) imports sokoban_tools.publish (publish)",
        "sokoban_tools.runtime.env (runtime) imports sokoban_tools.publish.card (publish)",
    ]
