"""``python -m sokoban_tools.compare``, the command name the card and the reports record:
runs :mod:`sokoban_tools.evaluation.compare`."""

import sys

from .evaluation.compare import main

if __name__ == "__main__":
    sys.exit(main())
