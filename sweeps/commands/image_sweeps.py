"""Image sweeps: ε × M × ensemble kind × holdout splits, every combiner in each trial.

    python -m sweeps.images --dataset NAME|npz:PATH|folder:PATH [--image-size N]
        [--num-gpus 4] [--gpus-per-trial 0.25] [--epsilons ...] [--members ...]
        [--ensembles ...] [--splits 5]
    python -m sweeps.cifar10 (also sweeps.mnist, sweeps.fashion_mnist): the same, on that set

The grid is sweeps/grids/images/mnist.yaml, every image data set's. One trial trains one
ensemble (kind, M, ε) on one split; the s-BFN head, MoE, logit and probability averaging are
all evaluated on it. An ensemble is a kind, an architecture, your factory (package.module:build)
or a list of them joined by '+' (simple_cnn+mynets:build: cycled over the members). Common
options (Ray, storage, MLflow, resume, --set epochs=... n_train=... for a reduced budget): --help.
"""

from dataclasses import replace

from sbfn_dist import catalog
from sbfn_dist.errors import SbfnError
from sbfn_dist.interfaces.usage import ListOf
from sbfn_dist.settings.fields import (ARCHITECTURES, HETEROGENEOUS, HOMOGENEOUS, MEMBER_SEPARATOR,
                                       defaults)
from sweeps.commands.cli import common_parser, given_axes, options, run, values_flag
from sweeps.engine.plan.grid_trials import LIST_JOIN, image_sweep
from sweeps.engine.plan.planning import SweepOptions


KINDS = (HETEROGENEOUS, *HOMOGENEOUS)     # the ensemble kinds (sbfn_dist/settings/fields.py)
ANY = "images"          # python -m sweeps.images: the image sweep of the data set --dataset names


def parser_for(command: str):
    """The parser of `python -m sweeps.<command>`: a named data set's, or ANY's (--dataset)."""
    p = common_parser(f"python -m sweeps.{command}", __doc__)
    g = p.add_argument_group("the grid")
    if command == ANY:
        _data_flags(g)
    g.add_argument("--epsilons", **values_flag("epsilon", "ε values"),
                   help="ε values (default: the grid's)")
    g.add_argument("--members", **values_flag("n_members", "M values"),
                   help="M values (default: the grid's)")
    g.add_argument("--ensembles", action=ListOf, help=f"from {', '.join(KINDS)}, an "
                   f"architecture ({', '.join(ARCHITECTURES)}), your factory "
                   f"(package.module:build) or a list joined by '{LIST_JOIN}' "
                   f"(simple_cnn{LIST_JOIN}mynets:build) (default: the grid's)")
    # Checked where a sweep file's `folds` is too (spaces.split_count): one refusal for both.
    g.add_argument("--splits", type=int, help="repeated holdout splits (default: the grid's, "
                   f"else {defaults('classification', 'image')['folds']}; 1 with --search "
                   "optuna or random, which run split 0 only)")
    return p


def _data_flags(group) -> None:
    group.add_argument("--dataset", help=f"{' | '.join(catalog.names('image'))} | npz:PATH | "
                       "folder:PATH (required: no default)")
    # Its range is the setting's (sbfn_dist/settings/fields.py), checked when the sweep is planned.
    group.add_argument("--image-size", type=int, metavar="N", help="resize a folder's images to "
                       "N x N (default: their own size, the same for all)")


def build_for(command: str):
    def build(argv):
        args = parser_for(command).parse_args(argv)
        dataset = chosen_dataset(args) if command == ANY else command
        spec = image_sweep(dataset, splits=args.splits, search=args.search,
                           axes=given_axes(args, ensembles=ensemble_values(args.ensembles)))
        return spec, args, with_image_size(args, options(args, catalog.short_name(dataset)))
    return build


def with_image_size(args, opts: SweepOptions) -> SweepOptions:
    """--image-size N as --set image_size=N (which wins where both are given): a trial setting
    the sweep refuses, as any --set, where no trial takes it (a named set, npz:PATH)."""
    if getattr(args, "image_size", None) is None:
        return opts
    return replace(opts, overrides={"image_size": args.image_size, **opts.overrides})


def chosen_dataset(args) -> str:
    """--dataset, or the one line that says what to give."""
    if args.dataset is None:
        raise SbfnError(f"--dataset is missing: name the images to sweep, one of "
                        f"{', '.join(catalog.names('image'))}, {catalog.own_data('image')}")
    return args.dataset


def ensemble_values(given: list[str] | None) -> list[str] | None:
    """--ensembles with each list (a+b) as the settings store one: joined by MEMBER_SEPARATOR."""
    if given is None:
        return None
    return [value.replace(LIST_JOIN, MEMBER_SEPARATOR) for value in given]


def main_for(command: str, argv=None) -> int:
    return run(build_for(command), argv)
