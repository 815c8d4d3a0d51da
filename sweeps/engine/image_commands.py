"""Image sweeps: ε × M × ensemble kind × holdout splits, every combiner in each trial.

    python -m sweeps.cifar10 --num-gpus 4 [--gpus-per-trial 0.25] [--epsilons ...]
        [--members ...] [--ensembles ...] [--splits 5]
    (the same for sweeps.mnist and sweeps.fashion_mnist)

The grid is sweeps/grids/images/mnist.yaml, every image data set's. One trial trains one
ensemble (kind, M, ε) on one split; the s-BFN head, MoE, logit and probability averaging are
all evaluated on it. Common options (Ray, storage, MLflow, resume,
--set epochs=... n_train=... for a reduced budget): --help.
"""

from sbfn_dist.settings.fields import HETEROGENEOUS, HOMOGENEOUS, defaults
from sbfn_dist.interfaces.usage import ListOf, bounded
from sweeps.engine.commands import common_parser, options, run
from sweeps.engine.spaces import image_sweep

KINDS = (HETEROGENEOUS, *HOMOGENEOUS)     # the ensemble kinds (sbfn_dist/settings/fields.py)


def parser_for(dataset: str):
    p = common_parser(f"python -m sweeps.{dataset}",
                      __doc__.replace("sweeps.cifar10", f"sweeps.{dataset}", 1))
    g = p.add_argument_group("the grid")
    g.add_argument("--epsilons", action=ListOf, item=bounded(float, 0.0, 1.0, "ε values"),
                   help="ε values (default: the grid's)")
    g.add_argument("--members", action=ListOf, item=bounded(int, 1, 100, "M values"),
                   help="M values (default: the grid's)")
    g.add_argument("--ensembles", action=ListOf, help=f"from {', '.join(KINDS)} "
                   "or an architecture (simple_cnn, resnet_tiny1, resnet_tiny2) "
                   "(default: the grid's)")
    g.add_argument("--splits", type=int, help="repeated holdout splits (default: the grid's, "
                   f"else {defaults('classification', 'image')['folds']})")
    return p


def build_for(dataset: str):
    def build(argv):
        args = parser_for(dataset).parse_args(argv)
        spec = image_sweep(dataset, splits=args.splits, members=args.members,
                           epsilons=args.epsilons, ensembles=args.ensembles)
        return spec, args, options(args, dataset, spec.objective)
    return build


def main_for(dataset: str, argv=None) -> int:
    return run(build_for(dataset), argv)
