"""`python -m sweeps.fashion_mnist`: the image sweep on fashion_mnist (options: --help,
sweeps/commands/image_sweeps.py)."""

import sys

from sweeps.commands.image_sweeps import main_for

if __name__ == "__main__":
    sys.exit(main_for("fashion_mnist"))
