"""`python -m sbfn_dist KEY=VALUE ...`: one trial from the shell (sbfn_dist/interfaces/cli.py)."""

import sys

from sbfn_dist.interfaces.cli import main

if __name__ == "__main__":
    sys.exit(main())
