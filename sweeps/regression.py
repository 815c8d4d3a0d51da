"""Regression sweeps: the paper's 80-configuration grid with 10-fold CV and the competitors.

    python -m sweeps.regression --dataset air_quality --grid regression80 [--folds 10] [--seeds N]
    python -m sweeps.regression --dataset appliances --grid paper-full --search optuna --num-samples 60
    python -m sweeps.regression --dataset diabetes --grid demo        # offline, bundled data

Each trial trains one hypothesis set (M, ε, seed) and runs every fold, every combiner and every
λ2 on it; the M = 1 reference and the competitors (SVM-RBF, RF, GB) run in the same sweep on
the same folds. Common options (Ray, storage, MLflow, resume): --help.
"""

import sys

from sweeps.cli import common_parser, flatten, number_list, options, run
from sweeps.spaces import COMPETITORS, REGRESSION_GRIDS, regression_sweep


def build(argv):
    p = common_parser(__doc__)
    g = p.add_argument_group("the grid")
    g.add_argument("--dataset", default="air_quality",
                   help="air_quality | appliances | diabetes | sincos | csv:PATH")
    g.add_argument("--grid", default="regression80",
                   help=f"one of {', '.join(REGRESSION_GRIDS)}")
    g.add_argument("--folds", type=int, default=10)
    g.add_argument("--seeds", type=int, default=1, help="repetitions with seeds 0..N-1")
    g.add_argument("--members", nargs="+", type=number_list(int, 1, 1000, "M values"))
    g.add_argument("--epsilons", nargs="+", type=number_list(float, 0.0, 1.0, "ε values"))
    g.add_argument("--lambda2", nargs="+", type=number_list(float, 0.0, 1e6, "λ2 values"))
    g.add_argument("--competitors", default=",".join(COMPETITORS),
                   help="comma list, or 'none' (default: all three)")
    args = p.parse_args(argv)
    competitors = [] if args.competitors == "none" else args.competitors.split(",")
    spec = regression_sweep(args.dataset, args.grid, folds=args.folds, seeds=args.seeds,
                            members=flatten(args.members), epsilons=flatten(args.epsilons),
                            lambda2=flatten(args.lambda2), competitors=competitors)
    dataset = args.dataset.rsplit("/", 1)[-1].removeprefix("csv:").removesuffix(".csv")
    return spec, args, options(args, f"{dataset}-{args.grid}", "sbfn_ls")


def main(argv=None) -> int:
    return run(build, argv)


if __name__ == "__main__":
    sys.exit(main())
