"""Regression sweeps: the paper's 80-configuration grid with 10-fold CV and the competitors.

    python -m sweeps.regression --dataset air_quality --grid regression80 [--folds 10] [--seeds N]
    python -m sweeps.regression --dataset appliances --grid paper-full --search optuna --num-samples 60
    python -m sweeps.regression --dataset diabetes --grid demo        # offline, bundled data

Each trial trains one hypothesis set (M, ε, seed) and runs every fold, every combiner and every
λ2 on it; the M = 1 reference and the competitors (SVM-RBF, RF, GB) run in the same sweep on
the same folds. Common options (Ray, storage, MLflow, resume): --help.
"""

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import sys

from sweeps.commands.tabular import command

build, main = command("regression", __doc__)

if __name__ == "__main__":
    sys.exit(main())
