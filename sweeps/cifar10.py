"""`python -m sweeps.cifar10`: the image sweep on cifar10 (options: --help,
sweeps/commands/images.py)."""

import sys

from sweeps.commands.images import main_for

if __name__ == "__main__":
    sys.exit(main_for("cifar10"))
