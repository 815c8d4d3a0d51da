"""`python -m sweeps.cifar10`: the image sweep on cifar10 (options: --help,
sweeps/engine/image_commands.py)."""

import sys

from sweeps.engine.image_commands import main_for

if __name__ == "__main__":
    sys.exit(main_for("cifar10"))
