"""Log to MLflow what a sweep could not: the operations saved in its mlflow-unlogged.json.

    python -m sweeps.relog results/<name> [--mlflow-uri URI]

A sweep whose tracking store stopped answering keeps going and saves each logging operation
that failed (sweeps/engine/tracking/mlflow_runs.py); this applies them in their order,
reading the records from the results directory, and keeps only those that fail again. Runs are
found by their tags, so nothing is logged twice into a second run.

A server that asks for a password takes it from MLFLOW_TRACKING_USERNAME / _PASSWORD (or from
USER:PASSWORD@ in --mlflow-uri, which is never printed or saved: sweeps/engine/common/tracking_uri.py).
"""

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import argparse
import sys

from sbfn_dist.errors import Parser, SbfnError
from sbfn_dist.interfaces.usage import HelpFormatter
from sweeps.engine.common.environment import quiet_logs
from sweeps.engine.common.store import ResultStore
from sweeps.engine.common.tracking_uri import check_tracking_uri, hide
from sweeps.engine.tracking.mlflow_runs import (Ledger, SweepTracker, client_environment, describe,
                                                first_line)


def relog(results: str, tracking_uri: str | None = None, out=None) -> int:
    """Apply the saved operations; stop at the first that fails (the store went away again)
    and keep it and the rest. Returns how many are still unlogged."""
    out = out or sys.stdout
    store = ResultStore(results)
    store.require_spec()            # a mistyped path is no sweep with nothing to log
    ledger = Ledger(store)
    saved = ledger.read()
    if not saved.get("ops"):
        print(f"nothing to log: {ledger.path} lists no operation", file=out)
        return 0
    uri = hide(tracking_uri) or saved["tracking_uri"]      # its credentials: in memory only
    check_tracking_uri(uri, "Pass --mlflow-uri the store to log them to")
    with client_environment(uri):
        done, error = apply_until_failure(
            SweepTracker(uri, saved["sweep"], ledger.store, saved["artifact_location"],
                         otherwise="run this again once the tracking store answers"),
            saved["ops"])
    ops = saved["ops"]
    left = ops[done:]
    ledger.write(left, uri, saved["sweep"], saved["artifact_location"], error)
    print(f"logged {done} of {len(ops)} operations to {uri} (experiment "
          f"'{saved['sweep']['name']}')", file=out)
    if left:
        print(f"still not logged ({error}):\n{describe(left)}\n  run this again once the "
              "tracking store answers", file=out)
    return len(left)


def apply_until_failure(tracker: SweepTracker, ops: list[dict]) -> tuple[int, str]:
    """How many operations were applied before the first failure, and its error."""
    for done, op in enumerate(ops):
        try:
            tracker.apply(op)
        except Exception as exc:  # noqa: BLE001 - kept for the next try, and said
            return done, f"{type(exc).__name__}: {first_line(exc)}"
    return len(ops), ""


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m sweeps.relog", formatter_class=HelpFormatter,
                    description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("results", help="the sweep's results directory or URI (<storage>/<name>)")
    parser.add_argument("--mlflow-uri", help="tracking URI to log to (default: the one the sweep "
                        "used, saved in mlflow-unlogged.json)")
    args = parser.parse_args(argv)
    try:
        with quiet_logs():      # MLflow's INFO lines say nothing a user acts on
            return 1 if relog(args.results, args.mlflow_uri) else 0
    except SbfnError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
