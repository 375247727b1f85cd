"""``python -m sokoban_tools.verify``, the command name the card and the reports record:
runs :mod:`sokoban_tools.verification.verify`."""

import sys

from .verification.verify import main

if __name__ == "__main__":
    sys.exit(main())
