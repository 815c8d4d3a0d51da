"""Stop what a killed run of a sweep left running, without resuming it.

    python -m sweeps.cleanup --name NAME [--storage results]

Only that sweep's leftovers: the processes of the local Ray its killed driver started
(sweeps/engine/run/claim.py); other Ray instances on the machine are left alone, which `ray stop` would
not do. Refused while a run of the sweep is going on. `--resume` does the same before it runs.
"""

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import argparse
import sys

from sbfn_dist.errors import Parser, SbfnError
from sbfn_dist.interfaces.usage import HelpFormatter
from sweeps.engine.run.claim import take_over
from sweeps.engine.common.store import ResultStore


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m sweeps.cleanup", description=__doc__,
               formatter_class=HelpFormatter, allow_abbrev=False)
    p.add_argument("--name", required=True, help="the sweep's name")
    p.add_argument("--storage", default="results", help="the sweep's --storage (a local "
                   "directory)")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        store = ResultStore(f"{args.storage.rstrip('/')}/{args.name}")
        if "://" in args.storage or not store.exists():
            raise SbfnError(f"there is no sweep at {store.root} on this machine (check --name "
                            "and --storage)")
        with take_over(store, args.name, sys.stdout) as held:
            if not held.stopped:
                print(f"[{args.name}] no process of its earlier runs is left")
    except SbfnError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
