"""``python -m sokoban_tools.baselines``, the command name the card and the reports record:
runs :mod:`sokoban_tools.evaluation.baselines`."""

import sys

from .evaluation.baselines import main

if __name__ == "__main__":
    sys.exit(main())
