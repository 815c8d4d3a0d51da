"""A finished sweep's best configuration (or a named one) as a saved model.

    python -m sweeps.export RESULTS --out DIR                  the best configuration
    python -m sweeps.export RESULTS --config ID --out DIR      a named one (its trial_id)
    python -m sweeps.export RESULTS --fold K --out DIR         refitted on fold K's training part

The configuration's recorded settings are refitted by SBFNRegressor / SBFNClassifier (its
objective model at its best setting as the combiner): on all rows of a k-fold CV (the final
model), on a held-out split's training part, or with --fold K on fold K's, whose held-out score
then equals the record's. DIR loads with SBFNRegressor.load(DIR) (or SBFNClassifier.load); the
model is also logged to MLflow under the sweep's run, when the sweep had tracking, and served by
`mlflow models serve`. docs/models.md.
"""

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import argparse
import sys

from sbfn_dist.errors import Parser, SbfnError
from sbfn_dist.interfaces.usage import HelpFormatter
from sweeps.api import SweepResult
from sweeps.engine.common.environment import quiet_logs
from sweeps.engine.model_export import report


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m sweeps.export", description=__doc__,
               formatter_class=HelpFormatter, allow_abbrev=False)
    p.add_argument("results", help="the sweep's results directory (<storage>/<name>)")
    p.add_argument("--out", required=True, help="the directory to save the model to (new, "
                   "empty, or a saved model, which is replaced)")
    p.add_argument("--config", help="the configuration's trial_id (default: the best, as "
                   "SweepResult.best() ranks them)")
    p.add_argument("--fold", type=int, help="refit on this fold's (split's) training part "
                   "(default: all rows of a k-fold CV; split 0 of held-out splits)")
    p.add_argument("--objective", help="the model that ranks configurations and is exported "
                   "(default: the sweep's own --objective, as its sweep.json records it)")
    p.add_argument("--metric", help="the score that ranks them (default: the task's, rmse or "
                   "accuracy)")
    p.add_argument("--mlflow-uri", help="the tracking store to log the model to (default: the "
                   "sweep's own store in RESULTS, when it has one)")
    p.add_argument("--no-mlflow", action="store_true", help="save the model only")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        with quiet_logs():      # MLflow's INFO lines say nothing a user acts on
            exported = SweepResult.open(args.results, args.objective).export(
                args.out, config=args.config, fold=args.fold, metric=args.metric,
                mlflow=not args.no_mlflow, mlflow_uri=args.mlflow_uri)
    except SbfnError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report(exported)))
    return 1 if exported.failed else 0


if __name__ == "__main__":
    sys.exit(main())
