"""``python -m sokoban_tools.pools``, the command name the card and the reports record:
runs :mod:`sokoban_tools.data.pools`."""

import sys

from .data.pools import main

if __name__ == "__main__":
    sys.exit(main())
