"""`python -m sweeps.mnist`: the image sweep on mnist (options: --help, sweeps/images.py)."""

import sys

from sweeps.images import main_for

if __name__ == "__main__":
    sys.exit(main_for("mnist"))
