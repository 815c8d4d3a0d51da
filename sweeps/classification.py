"""Tabular classification sweeps: M × ε with every classification combiner, 10-fold stratified CV.

    python -m sweeps.classification --dataset breast_cancer --grid classification25 [--folds 10]
    python -m sweeps.classification --dataset wine --grid demo        # offline, bundled data
    python -m sweeps.classification --dataset csv:PATH --set target=COLUMN [--grid ...]

Each trial trains one hypothesis set (M, ε, seed) of MLP members with ε-WTA cross-entropy and
runs every fold and every combiner on it: the s-BFN head on the fly and stacked, MoE, logit and
probability averaging (with a tuned temperature), the members' average. The M = 1 reference
(one network) and the competitors (SVM-RBF, RF, GB classifiers) run in the same sweep on the
same folds. Data sets: breast_cancer, wine, iris (bundled with scikit-learn) or any csv:PATH
with a class column. Common options (Ray, storage, MLflow, resume): --help.
"""

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import sys

from sweeps.commands.tabular import command

build, main = command("classification", __doc__)

if __name__ == "__main__":
    sys.exit(main())
