"""`python -m sweeps.images --dataset NAME|npz:PATH|folder:PATH`: the image sweep on any image
data set, yours too (options: --help, sweeps/commands/image_sweeps.py)."""

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import sys

from sweeps.commands.image_sweeps import ANY, main_for

if __name__ == "__main__":
    sys.exit(main_for(ANY))
