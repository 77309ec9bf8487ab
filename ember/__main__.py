"""`python -m ember COMMAND ...`: the `ember` command (`ember.tools.cli`)."""

import sys

from ember.tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
