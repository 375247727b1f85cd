"""Constants of the evaluation protocol sokoban-eval-256-v1 shared by every tool.

Boards are stratified by shortest solution length in player actions; the
source-pool audit, the selector and the summaries all use these strata.
Standard library only, like everything the selector imports, so that anyone
can re-run the selection with nothing installed.
"""

from __future__ import annotations

from collections import Counter

PROTOCOL = "sokoban-eval-256-v1"
VALIDATION_SIZE = 256
# (label, shortest length from, to) in stratum order.
STRATA = (("1-4", 1, 4), ("5-8", 5, 8), ("9-14", 9, 14))
# The settings every stored board was generated with, as verl-agent names them
# (env.sokoban.*): the runtime refuses others, the generator defaults to them.
DIM_ROOM = (6, 6)
NUM_BOXES = 1
SEARCH_DEPTH = 30
# verl-agent's Sokoban rewards and its launcher's horizon (env.max_steps in run_sokoban.sh),
# which the runtime plays, the baselines assume and the manifests record.
STEP_PENALTY = -0.1
BOX_ON_TARGET_REWARD = 1.0
BOX_OFF_TARGET_PENALTY = -1.0
WIN_REWARD = 10.0
DEFAULT_MAX_STEPS = 15


def stratum_of(length: int) -> str | None:
    """The label of the stratum holding ``length``, or ``None`` outside all strata."""
    return next((label for label, low, high in STRATA if low <= length <= high), None)


def histogram(lengths: list[int]) -> dict[str, int]:
    """Counts per shortest-solution length, ascending, with string keys for JSON."""
    return {str(k): v for k, v in sorted(Counter(lengths).items())}
