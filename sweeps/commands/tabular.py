"""The command of the tabular sweeps, for either task (`sweeps.regression`,
`sweeps.classification`): the grid's options on top of the common ones
(sweeps/commands/cli.py)."""

import functools

from sbfn_dist import catalog
from sbfn_dist.errors import SbfnError
from sbfn_dist.interfaces.usage import ListOf
from sbfn_dist.settings.fields import defaults
from sbfn_dist.settings.tasks import TASKS
from sweeps.commands.cli import common_parser, given_axes, options, run, values_flag
from sweeps.engine.plan.grid_files import grid_names, named_grid
from sweeps.engine.plan.grid_trials import RIDE_ALONG, tabular_sweep
from sweeps.engine.plan.options import SEEDS


# What the command runs when --dataset / --grid are left out (the grids: sweeps/grids/<task>/).
DEFAULT_DATASET = {"regression": "air_quality", "classification": "breast_cancer"}
DEFAULT_GRID = {"regression": "regression80", "classification": "classification25"}


def parser(task: str, doc: str):
    p = common_parser(f"python -m sweeps.{task}", doc)
    g = p.add_argument_group("the grid")
    g.add_argument("--dataset", default=DEFAULT_DATASET[task],
                   help=" | ".join((*catalog.names("tabular", task), "csv:PATH")))
    grids = grid_names(task)
    g.add_argument("--grid", default=DEFAULT_GRID[task], help=f"one of {', '.join(grids)} "
                   f"(sweeps/grids/{task}/GRID.yaml)")
    g.add_argument("--folds", type=int, help="k of the k-fold CV, stratified for classes "
                   f"(default: the grid's, else {defaults(task, 'tabular')['folds']}; "
                   f"{_grids_folds(task, grids)})")
    g.add_argument("--seeds", type=SEEDS.flag, help="repetitions with seeds 0..N-1 (default: the "
                   "grid's, else 1)")
    g.add_argument("--members", **values_flag("n_members", "M values"),
                   help="M values (default: the grid's)")
    g.add_argument("--epsilons", **values_flag("epsilon", "ε values"),
                   help="ε values (default: the grid's)")
    for name in RIDE_ALONG[task]:
        g.add_argument(f"--{name}", **values_flag(name, f"{name} values"),
                       help="values every trial evaluates on its members (default: the grid's)")
    g.add_argument("--competitors", action=ListOf, help="models run on the same folds, by "
                   "name or import path (--list-fields: competitors), or none (default: the "
                   f"grid's; the paper's {' '.join(TASKS[task].competitors)}, none for "
                   "heterogeneous)")
    return p


def _grids_folds(task: str, grids: tuple) -> str:
    """The grids that set their folds, as `demo: 5`."""
    folds = {name: named_grid(task, name).folds for name in grids}
    return ", ".join(f"{name}: {k}" for name, k in folds.items() if k)


def competitor_list(given: list[str] | None) -> list[str] | None:
    """--competitors: None (the grid's), [] for 'none', else the names as given."""
    if given is None or "none" not in given:
        return given
    if len(given) > 1:
        raise SbfnError(f"--competitors {' '.join(given)}: 'none' runs no competitor, so it "
                        "stands alone; drop it or the names")
    return []


def command(task: str, doc: str):
    """(build, main) of the task's sweep command: build(argv) -> (spec, args, options)."""
    def build(argv):
        args = parser(task, doc).parse_args(argv)
        settings = {name: getattr(args, name) for name in RIDE_ALONG[task]}
        spec = tabular_sweep(task, args.dataset, args.grid, folds=args.folds, seeds=args.seeds,
                             axes=given_axes(args),
                             competitors=competitor_list(args.competitors), **settings)
        return spec, args, options(args, f"{catalog.short_name(args.dataset)}-{args.grid}")
    return build, functools.partial(run, build)
