"""`python -m explorer`: the same command line as the `explorer` script; no logic of its own."""

import sys

from explorer.cli import main

if __name__ == "__main__":
    sys.exit(main())
