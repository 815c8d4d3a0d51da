"""python -m sweeps run FILE [--dry-run] [--resume] [--smoke]: the sweep a file defines.

FILE is a sweep file (YAML: data set, grid axes, settings, resources; docs/sweeps.md, "Python
API and sweep files") or the name of one shipped in the package's sweeps/grids/ (regression80,
demo, classification25, mnist). The same sweep from Python: Sweep.from_yaml(FILE).run().
The built-in grids' own commands: python -m sweeps.regression --help (also classification,
cifar10, mnist, fashion_mnist).
"""

import argparse
import functools
import sys
from dataclasses import replace
from pathlib import Path

from sbfn_dist.usage import HelpFormatter
from sweeps.api import Sweep, grid_file
from sweeps.cli import run


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sweeps", description=__doc__,
                                formatter_class=HelpFormatter)
    commands = p.add_subparsers(dest="command", required=True, metavar="run")
    r = commands.add_parser("run", help="run the sweep a file defines", description=__doc__,
                            formatter_class=HelpFormatter)
    r.add_argument("file", help="a sweep file (.yaml), or the name of a shipped one")
    r.add_argument("--dry-run", action="store_true",
                   help="list the trials and resources; run nothing")
    r.add_argument("--resume", action="store_true", help="continue the sweep of this name")
    r.add_argument("--smoke", action="store_true", help="a tiny version of the same sweep")
    return p


def build(argv):
    """(spec, args, options) for sweeps.cli.run, which runs it and reports errors in one line."""
    args = parser().parse_args(argv)
    shipped = not Path(args.file).exists() and Path(args.file).suffix not in (".yaml", ".yml")
    sweep = Sweep.from_yaml(grid_file(args.file) if shipped else args.file,
                            **({"smoke": True} if args.smoke else {}))
    # The sweep is made smoke already (its name says so): the runner must not shrink it again.
    return (sweep.spec, argparse.Namespace(smoke=False),
            replace(sweep.options, dry_run=args.dry_run, resume=args.resume))


main = functools.partial(run, build)

if __name__ == "__main__":
    sys.exit(main())
