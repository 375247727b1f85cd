"""The 256 validation boards as an Inspect AI task, and its logs as our episode logs.

    inspect eval sokoban_tools/sokoban_fairness --model openai-api/local/MODEL     # installed package
    inspect eval sokoban_tools/integrations/inspect_task/task.py --model ...      # from a clone
    python -m sokoban_tools inspect-log logs/<run>.eval --log runs/model.jsonl    # then score, compare, --add

:mod:`.task` plays each board once with the turn ``evaluate`` plays (:mod:`..served.turn`),
through whichever model provider Inspect is given; :mod:`.convert` turns its log into the
episode log and run manifest every other command reads. Needs the ``inspect`` extra. This
module holds what both sides name, and imports nothing of Inspect.
"""

from __future__ import annotations

PACKAGE = "sokoban_tools"  # the name Inspect namespaces the package's tasks by (its entry point's name)
TASK = "sokoban_fairness"
REGISTERED_TASK = f"{PACKAGE}/{TASK}"  # what `inspect eval` takes from an installed package
TASK_FILE = "sokoban_tools/integrations/inspect_task/task.py"  # what it takes from a clone
# The key of a sample's store that holds its episode's record, as the episode log writes it.
EPISODE_KEY = "sokoban_fairness_episode"
# The task's metadata (in the Inspect log's eval spec) that says the log is this task's.
TASK_FORMAT = "sokoban-fairness inspect task 1"
