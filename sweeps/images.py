"""Image sweeps: ε × M × ensemble kind × holdout splits, every combiner in each trial.

    python -m sweeps.cifar10 --num-gpus 4 [--gpus-per-trial 0.25] [--epsilons ...]
        [--members ...] [--ensembles ...] [--splits 5]
    (the same for sweeps.mnist and sweeps.fashion_mnist)

One trial trains one ensemble (kind, M, ε) on one split; the s-BFN head, MoE, logit and
probability averaging are all evaluated on it. Common options (Ray, storage, MLflow, resume,
--set epochs=... n_train=... for a reduced budget): --help.
"""

from sbfn_dist.fields import defaults
from sweeps.cli import common_parser, flatten, number_list, options, run
from sweeps.spaces import IMAGE_ENSEMBLES, image_sweep


def parser_for(dataset: str):
    p = common_parser(__doc__.replace("sweeps.cifar10", f"sweeps.{dataset}", 1))
    g = p.add_argument_group("the grid")
    g.add_argument("--epsilons", nargs="+", type=number_list(float, 0.0, 1.0, "ε values"))
    g.add_argument("--members", nargs="+", type=number_list(int, 1, 100, "M values"))
    g.add_argument("--ensembles", nargs="+", help=f"from {', '.join(IMAGE_ENSEMBLES)} "
                   "or an architecture (simple_cnn, resnet_tiny1, resnet_tiny2)")
    g.add_argument("--splits", type=int, help="repeated holdout splits (default: "
                   f"{defaults('classification', 'image')['folds']})")
    return p


def build_for(dataset: str):
    def build(argv):
        args = parser_for(dataset).parse_args(argv)
        ensembles = [e for part in args.ensembles or [] for e in part.split(",") if e] or None
        spec = image_sweep(dataset, splits=args.splits, members=flatten(args.members),
                           epsilons=flatten(args.epsilons), ensembles=ensembles)
        return spec, args, options(args, dataset, spec.objective)
    return build


def main_for(dataset: str, argv=None) -> int:
    return run(build_for(dataset), argv)
