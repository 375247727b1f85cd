"""``python -m sokoban_tools.summary``, the command name the card and the reports record:
runs :mod:`sokoban_tools.verification.summary`."""

import sys

from .verification.summary import main

if __name__ == "__main__":
    sys.exit(main())
