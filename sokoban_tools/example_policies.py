"""``python -m sokoban_tools.example_policies``, the command name the card and the reports record:
runs :mod:`sokoban_tools.evaluation.example_policies`."""

import sys

from .evaluation.example_policies import main

if __name__ == "__main__":
    sys.exit(main())
