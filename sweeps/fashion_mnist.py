"""`python -m sweeps.fashion_mnist`: the image sweep on fashion_mnist (options: --help,
sweeps/engine/image_commands.py)."""

import sys

from sweeps.engine.image_commands import main_for

if __name__ == "__main__":
    sys.exit(main_for("fashion_mnist"))
