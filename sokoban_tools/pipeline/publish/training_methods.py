"""The training methods on docs/training.md, from the one list (:data:`sokoban_tools.training.methods.METHODS`):
what each computes, and its recipe, each setting with its value, source and deviation."""

from __future__ import annotations

from ...training.methods import METHODS


def _deviation(choice) -> str:
    return f"yes: {choice.reason}" if choice.deviates else "no"


def _closest(module, earlier: list) -> object | None:
    """The earlier method sharing most of ``module``'s recipe (None if none shares any)."""
    shared = [(sum(c in e.RECIPE for c in module.RECIPE), -i, e) for i, e in enumerate(earlier)]
    best = max(shared, default=(0, 0, None), key=lambda item: item[:2])
    return best[2] if best[0] else None


def method_values(table) -> dict[str, str]:
    """``training_methods``: one line a method; ``training_recipes``: a recipe table a method, the
    settings it shares with a method above it named, not repeated (``table``: the card's table maker)."""
    lines = [f"- **{m.LABEL}** (`--method {m.NAME}`, `sokoban_tools/training/{m.NAME}.py`): {m.SUMMARY}."
             for m in METHODS]
    sections = []
    for i, module in enumerate(METHODS):
        like = _closest(module, list(METHODS[:i]))
        own = [c for c in module.RECIPE if like is None or c not in like.RECIPE]
        rows = [["Setting", "Value", "Source", "Deviates from the method's source"], ["---"] * 4]
        rows += [[f"`{c.name}`", f"`{c.value}`", c.source, _deviation(c)] for c in own]
        shared = [f"`{c.name}`" for c in module.RECIPE if like is not None and c in like.RECIPE]
        rest = f"\n\nAs {like.LABEL}'s: {', '.join(shared)}." if shared else ""
        sections.append(f"### {module.LABEL}\n\n{table(rows)}{rest}")
    return {"training_methods": "\n".join(lines), "training_recipes": "\n\n".join(sections)}
