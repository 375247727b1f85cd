"""Two parts with a border: the product never imports the pipeline, and no module imports a later stage.

The installed product (``sokoban_tools`` without ``pipeline``, and the
standard-library modules beside the loading script) is what a trainer or an
evaluator gets from the wheel: the rules, the row format, the runtime and
scoring and the integrations. The build pipeline (``sokoban_tools.pipeline`` and the top-level
selector) writes the published files from a clone; it imports the product,
never the other way round. Within each part the modules are stages in order:

  product:  shared -> rules -> records -> runtime -> evaluation -> integrations -> training
            (evaluation checks logs by the rules alone: it imports nothing of runtime)
  pipeline: pipeline-shared -> generate -> selection -> verification -> examples -> publish

and the command line (``__main__``) sits above both.
"""

from __future__ import annotations

import ast

from conftest import REPO

PRODUCT_STAGES = ("shared", "rules", "records", "runtime", "evaluation", "integrations", "training")
PIPELINE_STAGES = ("pipeline-shared", "generate", "selection", "verification", "examples", "publish")
STAGES = (*PRODUCT_STAGES, *PIPELINE_STAGES, "commands")
BESIDE_THE_SCRIPT = {"sokoban_render", "sokoban_pins", "sokoban_published"}  # shipped with the loading script
SHARED = {"sokoban_tools", "sokoban_tools.checks", "sokoban_tools.layout", "sokoban_tools.files", "sokoban_tools.paths",
          "sokoban_tools.protocol", "sokoban_tools.help_text", "sokoban_tools.extras", *BESIDE_THE_SCRIPT}
PIPELINE_SHARED = {"sokoban_tools.pipeline", "sokoban_tools.pipeline.artifacts", "sokoban_tools.pipeline.release"}
EXAMPLES = {"sokoban_tools.pipeline.baselines", "sokoban_tools.pipeline.example_policies",
            "sokoban_tools.pipeline.results_entries"}
SELECTOR = "select_evaluation_256"
OURS = ("sokoban_tools", SELECTOR, *BESIDE_THE_SCRIPT)


def stage_of(module: str) -> str:
    """The stage of a module of this repository, by where it lives."""
    if module == SELECTOR:
        return "selection"
    if module in SHARED:
        return "shared"
    if module in PIPELINE_SHARED:
        return "pipeline-shared"
    if module in EXAMPLES:
        return "examples"
    if module == "sokoban_tools.__main__":
        return "commands"
    parts = module.split(".")
    if parts[1] == "pipeline":
        return parts[2]
    return parts[1]


def part_of(module: str) -> str:
    stage = stage_of(module)
    return "product" if stage in PRODUCT_STAGES else "pipeline" if stage in PIPELINE_STAGES else "commands"


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
    return {name for name in found if name.split(".")[0] in OURS}


def violations(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """``module imports module`` for each import across the border from the product into
    the pipeline, or against the stage order."""
    modules = set(sources)
    out = []
    for module, (source, is_package) in sorted(sources.items()):
        for name in sorted(imported_modules(source, module, is_package)):
            if name not in modules:
                continue
            if part_of(module) == "product" and part_of(name) == "pipeline":
                out.append(f"{module} (product) imports {name} (pipeline)")
            elif STAGES.index(stage_of(name)) > STAGES.index(stage_of(module)):
                out.append(f"{module} ({stage_of(module)}) imports {name} ({stage_of(name)})")
    return out


def repository_sources() -> dict[str, tuple[str, bool]]:
    sources = {name: ((REPO / f"{name}.py").read_text(encoding="utf-8"), False)
               for name in (SELECTOR, *BESIDE_THE_SCRIPT)}
    for path in (REPO / "sokoban_tools").rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        sources[module] = (path.read_text(encoding="utf-8"), is_package)
    return sources


def test_stages__every_module_lives_in_a_known_stage():
    sources = repository_sources()
    assert {stage_of(module) for module in sources} == set(STAGES)
    assert sorted(m for m in sources if stage_of(m) == "commands") == ["sokoban_tools.__main__"]


def test_border__the_product_imports_nothing_of_the_pipeline_and_stages_go_one_way():
    sources = repository_sources()
    assert len(sources) > 30
    assert violations(sources) == []


def test_border__the_wheel_ships_the_product_alone():
    """pyproject.toml leaves the pipeline and the selector out of the wheel."""
    import tomllib

    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert set(setuptools["py-modules"]) == {"sokoban_fairness", *BESIDE_THE_SCRIPT}
    assert setuptools["packages"]["find"]["exclude"] == ["sokoban_tools.pipeline", "sokoban_tools.pipeline.*"]


def test_border__the_check_sees_a_crossing_and_a_later_import_at_any_depth_and_relative():
    sources = repository_sources()
    sources["sokoban_tools.runtime.env"] = ("def render():\n    from ..pipeline.publish import card\n", False)
    sources["sokoban_tools.rules.board"] = ("import sokoban_tools.evaluation.stats\n", False)
    sources["sokoban_tools.pipeline.generate.pools"] = ("from ..verification import verify\n", False)
    assert violations(sources) == [
        "sokoban_tools.pipeline.generate.pools (generate) imports sokoban_tools.pipeline.verification (verification)",
        "sokoban_tools.pipeline.generate.pools (generate) imports sokoban_tools.pipeline.verification.verify "
        "(verification)",
        "sokoban_tools.rules.board (rules) imports sokoban_tools.evaluation.stats (evaluation)",
        "sokoban_tools.runtime.env (product) imports sokoban_tools.pipeline.publish (pipeline)",
        "sokoban_tools.runtime.env (product) imports sokoban_tools.pipeline.publish.card (pipeline)",
    ]


def test_border__scoring_checks_logs_by_the_rules_never_by_the_runtime_that_wrote_them():
    """Replay and the exact baselines recompute from :mod:`sokoban_tools.rules`: a check that ran the
    runtime's own environment would share its mistakes."""
    sources = repository_sources()
    scoring = [module for module in sources if stage_of(module) == "evaluation"]
    assert "sokoban_tools.evaluation.replay" in scoring
    crossing = []
    for module in scoring:
        source, is_package = sources[module]
        crossing += [f"{module} imports {name}" for name in sorted(imported_modules(source, module, is_package))
                     if stage_of(name) == "runtime"]
    assert crossing == []
