"""`python -m sweeps.images --dataset NAME|npz:PATH|folder:PATH`: the image sweep on any image
data set, yours too (options: --help, sweeps/commands/image_sweeps.py)."""

import sys

from sweeps.commands.image_sweeps import ANY, main_for

if __name__ == "__main__":
    sys.exit(main_for(ANY))
