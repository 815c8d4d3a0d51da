"""`python -m sweeps.mnist`: the image sweep on mnist (options: --help,
sweeps/commands/images.py)."""

import sys

from sweeps.commands.images import main_for

if __name__ == "__main__":
    sys.exit(main_for("mnist"))
