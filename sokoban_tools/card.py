"""``python -m sokoban_tools.card``, the command name the card and the reports record:
runs :mod:`sokoban_tools.publish.card`."""

import sys

from .publish.card import main

if __name__ == "__main__":
    sys.exit(main())
