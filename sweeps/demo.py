"""The README's demo: a real small sweep through Ray Tune on bundled data, offline.

scikit-learn's diabetes data (442 patients, 10 features), 5-fold CV: M in {2, 5, 10} x
epsilon in {0, 0.35} hypothesis sets trained online (Algorithm 1), every combiner and lambda2
in {0, 3, 5, 7} on each, the M = 1 reference and SVM-RBF / RF / GB on the same folds. Ray runs
the trials on this machine (127.0.0.1), MLflow logs them to results/<name>/mlflow.db, and the
records go to results/<name>/results.parquet. About 2 minutes on 2 cores.

    python -m sweeps.demo [--name NAME] [--storage DIR] [--no-mlflow]
"""

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import sys
import time

from sweeps.regression import main as regression_main


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--name" not in argv and "--resume" not in argv:
        argv += ["--name", time.strftime("demo-%Y%m%d-%H%M%S")]
    print(__doc__.split("\n\n")[1].replace("\n", " ") + "\n", flush=True)
    return regression_main(["--dataset", "diabetes", "--grid", "demo", *argv])


if __name__ == "__main__":
    sys.exit(main())
