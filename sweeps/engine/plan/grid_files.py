"""The named grids: sweep files shipped in sweeps/grids/<folder>/ (GRID_FOLDERS), the one source
of each grid, read as any sweep file (sweep_keys.py). A command's `--grid NAME` and a file's
`grid: NAME` take a grid file's grid keys (GRID_KEYS); its data set and run options are for
running the file itself (`python -m sweeps run NAME`).
"""

from dataclasses import dataclass, field, replace
from importlib import resources as package_files

from sbfn_dist.errors import ConfigError, SbfnError, did_you_mean
from sweeps.engine.plan.sweep_keys import SweepFileError, checked, load


@dataclass(frozen=True)
class Grid:
    """A named grid (a file's grid keys, sweepfile.grid_of) or a sweep file's own."""
    axes: dict                     # member settings crossed, in this order (M: largest first)
    folds: int | None = None       # None: the library's default (10-fold CV) unless --folds
    preset: dict = field(default_factory=dict)  # settings every trial of the grid shares
    references: bool = True        # the M = 1 reference trials (REFERENCE)
    competitors: tuple | None = None   # competitor trials; None: the task's (the paper's)
    per_fold: bool = False         # one trial per fold (a fold takes minutes) instead of per seed
    seeds: int = 1                 # repetitions with seeds 0..seeds-1 (tables)


# What a grid is: the keys a command's --grid and a file's `grid:` take from a grid file.
GRID_KEYS = ("axes", "preset", "folds", "seeds", "references", "competitors", "per_fold")


def grid_of(d: dict, start: Grid) -> Grid:
    """`start` with a checked sweep's grid keys: its axes and preset join the start's (a value
    given replaces the start's), its other grid keys replace the start's."""
    grid = replace(start, axes={**start.axes, **d.get("axes", {})},
                   preset={**start.preset, **d.get("preset", {})},
                   **{k: d[k] for k in GRID_KEYS if k in d and k not in ("axes", "preset")})
    for key in sorted(grid.preset.keys() & grid.axes.keys()):
        raise SbfnError(f"preset.{key}: every trial takes {key} from the grid's axis, so this "
                        f"value would be ignored; give it as axes: {{{key}: [VALUE]}}")
    return grid


# The shipped grids (package data), one folder per command that takes them: sweeps.regression's
# and sweeps.classification's --grid, and the image grid every image sweep starts from. A
# shipped file's name is looked up in this order: `demo` is regression's, `classification/demo`
# the other.
GRIDS = package_files.files("sweeps") / "grids"
GRID_FOLDERS = ("regression", "classification", "images")
# Every image data set's grid, shipped as MNIST's sweep on one GPU (python -m sweeps run mnist).
IMAGE_GRID = "images/mnist"
# Keys of a sweep file that a grid file may not hold: the commands' --grid would leave them out.
NOT_IN_A_GRID = {
    "settings": "a grid file holds its settings under `preset` (the grid's own, which --set "
                "and --smoke replace), not `settings` (a file's --set, which --grid leaves out)",
    "grid": "a grid file is a whole grid, not one started from another (`grid`)",
}


def grid_names(folder: str) -> tuple:
    """The grids shipped in sweeps/grids/<folder>/, by name."""
    return tuple(sorted(p.name.removesuffix(".yaml") for p in (GRIDS / folder).iterdir()
                        if p.name.endswith(".yaml")))


def named_grid(task: str, name: str) -> Grid:
    """A tabular task's named grid: sweeps/grids/<task>/<name>.yaml."""
    known = grid_names(task)
    if name not in known:
        raise ConfigError("grid", name, f"one of {known} for {task} data sets"
                          f"{did_you_mean(str(name), known)}")
    return _grid_in(GRIDS / task / f"{name}.yaml")


def image_grid() -> Grid:
    """The grid every image sweep starts from (IMAGE_GRID)."""
    return _grid_in(grid_file(IMAGE_GRID))


def _grid_in(path) -> Grid:
    """A grid file's grid keys (GRID_KEYS), checked as any sweep file's."""
    d = load(path)
    try:
        d = checked(d)
    except SbfnError as exc:
        raise SweepFileError(f"{path}: {exc}") from None
    for key in (k for k in NOT_IN_A_GRID if d.get(k)):
        raise SweepFileError(f"{path}: {NOT_IN_A_GRID[key]}")
    return grid_of(d, Grid({}))


def grid_file(name: str):
    """A shipped sweep file by name: NAME (the first folder of GRID_FOLDERS holding it) or
    FOLDER/NAME."""
    wanted = [name] if "/" in name else [f"{folder}/{name}" for folder in GRID_FOLDERS]
    for qualified in wanted:
        folder, _, stem = qualified.partition("/")
        if folder in GRID_FOLDERS and stem in grid_names(folder):
            return GRIDS / folder / f"{stem}.yaml"
    known = shipped_names()
    raise SweepFileError(f"no shipped sweep file '{name}'{did_you_mean(name, known)}; known: "
                         f"{known}")


def shipped_names() -> list:
    """The shipped files as `python -m sweeps run` takes them: a name two folders share is
    qualified in the second (classification/demo)."""
    names = []
    for folder in GRID_FOLDERS:
        names += [n if n not in names else f"{folder}/{n}" for n in grid_names(folder)]
    return names
