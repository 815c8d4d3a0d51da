"""`python -m sweeps.mnist`: the image sweep on mnist (options: --help,
sweeps/commands/image_sweeps.py)."""

import sys

from sweeps.commands.image_sweeps import main_for

if __name__ == "__main__":
    sys.exit(main_for("mnist"))
