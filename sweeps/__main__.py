"""python -m sweeps run FILE [--dry-run] [--resume] [--smoke] [run options]: a file's sweep.

FILE is a sweep file (YAML: data set, grid axes, settings, resources; docs/sweeps.md, "Python
API and sweep files") or the name of a built-in grid, shipped as a file in the package's
sweeps/grids/ ({grids}). The same sweep from Python: Sweep.from_yaml(FILE).run().
The built-in grids' own commands: python -m sweeps.NAME --help, NAME one of
{commands}. The run options (--num-cpus, --storage, --name, --set, ...) are every sweep command's;
a flag replaces the file's key.
"""

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import argparse
import functools
import shlex
import sys
from dataclasses import replace
from pathlib import Path

from sbfn_dist.interfaces.usage import HelpFormatter, add_list_fields
from sweeps.api import Sweep
from sweeps.commands.cli import SweepParser, run
from sweeps.engine.plan.grid_files import GRID_FOLDERS, grid_file, grid_names
from sweeps.engine.plan.options import BY_NAME, add_flags, given, into_definition
from sweeps.engine.plan.sweep_keys import load



def _shipped_grids() -> str:
    """The built-in grids as `run` names them: regression's by name (demo is regression's), the
    other folders' as folder/name where regression has the same name."""
    regression = grid_names("regression")
    return ", ".join([*regression, *(f"{folder}/{n}" if n in regression else n
                                     for folder in GRID_FOLDERS[1:] for n in grid_names(folder))])


# The sweep commands of the built-in grids (sweeps/NAME.py), which a user may have meant by
# `python -m sweeps` alone; tabular first, as the README shows them.
COMMANDS = ("regression", "classification", "images", "cifar10", "mnist", "fashion_mnist")
DESCRIPTION = __doc__.format(grids=_shipped_grids(), commands=", ".join(COMMANDS))
# argparse's own line was `the following arguments are required: run`: the one sub-command, and
# not the commands a newcomer more likely wanted.
NO_COMMAND = ("name a command: python -m sweeps run FILE (a sweep file or a shipped grid), or a "
              f"built-in grid's own, python -m sweeps.NAME, NAME one of {', '.join(COMMANDS)}")

def parser() -> argparse.ArgumentParser:
    p = SweepParser(prog="python -m sweeps", description=DESCRIPTION, formatter_class=HelpFormatter,
                    allow_abbrev=False)
    commands = p.add_subparsers(dest="command", metavar="run")     # none: parse's NO_COMMAND
    r = commands.add_parser("run", help="run the sweep a file defines", description=DESCRIPTION,
                            formatter_class=HelpFormatter, allow_abbrev=False)
    r.add_argument("file", help="a sweep file (.yaml), or the name of a shipped one")
    add_flags(r)            # every run option, as the other sweep commands have them
    add_list_fields(r)
    return p


def parse(argv: list) -> argparse.Namespace:
    """The parsed command line; none of its commands refused in one line naming them all, and
    a built-in grid's command after a space (`python -m sweeps regression ...`, argparse's
    "invalid choice: 'regression' (choose from 'run')") in one naming the command meant."""
    p = parser()
    if argv and argv[0] in COMMANDS:
        p.error(f"'{argv[0]}' is a command of its own, with a dot: "
                f"{shlex.join(['python', '-m', f'sweeps.{argv[0]}', *argv[1:]])}")
    args = p.parse_args(argv)
    if args.command is None:
        p.error(NO_COMMAND)
    return args


def build(argv):
    """(spec, args, options) for sweeps.commands.cli.run, which runs it and reports errors
    in one line. A flag replaces the file's key of the same option; --set joins the file's
    settings."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    flags = given(args)
    shipped = not Path(args.file).exists() and Path(args.file).suffix not in (".yaml", ".yml")
    path = grid_file(args.file) if shipped else args.file
    in_file = {k: v for k, v in flags.items() if BY_NAME[k].file_key}
    sweep = Sweep.from_dict(into_definition(load(path), in_file), source=str(path),
                            label=Path(path).stem, flags=frozenset(in_file))
    # The sweep is made smoke already (its name says so): the runner must not shrink it again.
    run_only = {k: v for k, v in flags.items() if not BY_NAME[k].file_key}   # --resume, --dry-run
    command = shlex.join(["python", "-m", "sweeps", *argv])
    return (sweep.spec, argparse.Namespace(smoke=False),
            replace(sweep.options, command=command, **run_only))


main = functools.partial(run, build)

if __name__ == "__main__":
    sys.exit(main())
