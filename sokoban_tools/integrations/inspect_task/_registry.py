"""What the package's ``inspect_ai`` entry point loads, so ``inspect eval sokoban_tools/sokoban_fairness`` finds the task."""

from .task import sokoban_fairness, sokoban_success, sokoban_turns  # noqa: F401
