"""``python -m sokoban_tools.score``, the command name the card and the reports record:
runs :mod:`sokoban_tools.evaluation.score`."""

import sys

from .evaluation.score import main

if __name__ == "__main__":
    sys.exit(main())
