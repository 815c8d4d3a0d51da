"""Every run option of a sweep, declared once: what it allows, its default, its help, its flag,
its sweep-file key and where it applies. The flags of every sweep command (`common_parser`), the
keys of a sweep file (sweeps/engine/plan/sweepfile.py) and SweepOptions' defaults
(sweeps/engine/plan/planning.py) are made from this table, so a new option is one row here.

    --num-cpus 4                    a flag: every sweep command and `python -m sweeps run FILE`
    resources: {num_cpus: 4}        its key in a sweep file (or a dict: Sweep.from_dict)
    sweep.run(num_cpus=4)           the API: any option with a file key
    SweepOptions.num_cpus           the runner's field, whose default is the row's

An option's value is checked by its kind, the same for a flag's text and a file's value
(`--max-failures -1` and `max_failures: -1` are refused alike). A flag left out is None, so
`python -m sweeps run FILE` can tell which flags override the file's keys.
"""

import argparse
import math
import numbers
import os
from dataclasses import dataclass
from typing import Any, Callable

from sbfn_dist.interfaces.cli import parse_assignments
from sbfn_dist.settings.fields import SEED_LIMIT
from sweeps.engine.plan.packing import PACK_MODES


@dataclass(frozen=True)
class Kind:
    """What a value may be: `accept` returns the value kept (a path-like as text, a numpy
    integer as int) or raises ValueError; `parse` reads a flag's text first."""
    text: str                               # in words, for the refusal: "an integer >= 1"
    accept: Callable[[Any], Any]
    parse: Callable[[str], Any] = str
    choices: tuple | None = None

    def check(self, value):
        """The value kept, or ValueError naming what is allowed."""
        try:
            return self.accept(value)
        except (TypeError, ValueError):
            raise ValueError(self.text) from None

    def flag(self, text: str):
        """An argparse `type`: the value of a flag's text, or argparse's one-line error."""
        try:
            return self.check(self.parse(text))
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not {self.text}") from None


def _text(value) -> str:
    if isinstance(value, (str, os.PathLike)) and isinstance(os.fspath(value), str):
        return os.fspath(value)                 # pathlib.Path(...) is as good as its text
    raise ValueError


def _folder(value) -> str:
    """A folder's path as text; "" (a variable that was not set) would be the working directory."""
    text = _text(value)
    if not text.strip():
        raise ValueError
    return os.path.expanduser(text)


def _is_bool(value) -> bool:
    """True, False or numpy's bool_: never a number here (a YAML `yes` is not 1 CPU)."""
    return type(value).__name__ in ("bool", "bool_")


def _flag(value) -> bool:
    if not _is_bool(value):
        raise ValueError
    return bool(value)


def _integer(least: int | None = None, below: int | None = None):
    def accept(value) -> int:
        if _is_bool(value) or not isinstance(value, numbers.Integral):
            raise ValueError
        if (least is not None and value < least) or (below is not None and value >= below):
            raise ValueError
        return int(value)                       # numpy integers become Python ones
    return accept


def _number(least: float, open_: bool = False):
    def accept(value) -> float:
        if _is_bool(value) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError
        if value < least or (open_ and value == least):
            raise ValueError
        return float(value)
    return accept


def _one_of(choices: tuple):
    def accept(value) -> str:
        if value not in choices:
            raise ValueError
        return value
    return accept


def _mapping(value) -> dict:
    if not isinstance(value, dict):
        raise ValueError
    return dict(value)


TEXT = Kind("text", _text)
FOLDER = Kind("a folder's path (was a variable in it unset?)", _folder)
FLAG = Kind("true or false", _flag)
INTEGER = Kind("an integer", _integer(), int)
SEED = Kind(f"an integer in [0, {SEED_LIMIT})", _integer(0, SEED_LIMIT), int)
COUNT = Kind("an integer >= 1", _integer(1), int)
# A tabular grid's repetitions run seeds 0..N-1, each a SEED (numpy's range).
SEEDS = Kind(f"an integer in [1, {SEED_LIMIT}] (its trials take seeds 0..N-1)",
             _integer(1, SEED_LIMIT + 1), int)
RETRIES = Kind("an integer >= 0 (0: no retry)", _integer(0), int)
AMOUNT = Kind("a number >= 0", _number(0.0), float)
POSITIVE = Kind("a number > 0", _number(0.0, open_=True), float)
SECONDS = Kind("a number of seconds >= 0", _number(0.0), float)
MAPPING = Kind("a mapping (key: value)", _mapping)
PACK = Kind(f"one of {', '.join(PACK_MODES)}", _one_of(PACK_MODES), choices=PACK_MODES)
# auto: trials sharing a GPU of the sweep's own Ray run under an MPS daemon it starts where
# one can run; on: or refused; off: time-sliced (sweeps/engine/run/mps.py decides and starts it).
MPS_MODES = ("auto", "on", "off")
MPS = Kind(f"one of {', '.join(MPS_MODES)}", _one_of(MPS_MODES), choices=MPS_MODES)
# The model whose best mean drives search, "best so far" and the best configuration, per task.
# Regression: the closed-form s-BFN with the members' own outputs and an intercept beside the
# paper's Gaussian units (docs/method.md): it beat the paper's map (sbfn_ls) and averaging in
# every published regression run (docs/results/README.md, claim 1: Air Quality 0.0296 vs
# 0.291 g/m3, Appliances 89.8 vs 97.7 Wh, the Candanedo split 91.5 vs 99.1), where sbfn_ls
# ranked below averaging; --objective sbfn_ls ranks by the paper's map.
OBJECTIVES = {"regression": "sbfn_ls_linear", "classification": "sbfn"}
# The paper's own s-BFN of each task (its feature map; Algorithm 2's head, on the fly).
PAPER_FORMS = {"regression": "sbfn_ls", "classification": "sbfn"}
# grid: every planned point; optuna: TPE over the axes; random: Tune's own draws of them
# (sweeps/engine/tune.py). A range axis (uniform(0, 1), ...) takes optuna or random.
SEARCHES = ("grid", "optuna", "random")
SEARCH = Kind(f"one of {', '.join(SEARCHES)}", _one_of(SEARCHES), choices=SEARCHES)
# best: each trial saves its objective model per fold, and the sweep's end deletes all but the
# best configuration's (sweeps/engine/model_export.py); none: nothing saved, an export refits.
KEEPS = ("best", "none")
KEEP = Kind(f"one of {', '.join(KEEPS)}", _one_of(KEEPS), choices=KEEPS)


@dataclass(frozen=True)
class Option:
    name: str                   # SweepOptions' field (and the file key), e.g. num_cpus
    kind: Kind
    default: Any                # SweepOptions' default; None: what `unset` says happens
    help: str
    unset: str = ""             # the default in words where the value alone does not say it
    section: str | None = ""    # the file key: "" top level, "resources", None: a flag only
    flag: str = ""              # its spelling; "": --NAME with '-' for '_'
    negated: bool = False       # a flag that sets False (--no-mlflow)
    runner: bool = True         # a SweepOptions field (False: it shapes the trials instead)

    @property
    def flag_name(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def file_key(self) -> str | None:
        """Where a sweep file holds it: 'num_cpus' under resources is 'resources.num_cpus'."""
        if self.section is None:
            return None
        return f"{self.section}.{self.name}" if self.section else self.name

    def help_text(self) -> str:
        if self.kind is FLAG:
            return self.help                    # a switch: what it does when given
        said = self.unset or (f"{self.default:g}" if isinstance(self.default, float)
                              else self.default)
        return f"{self.help} (default: {said})" if said is not None else self.help


# Grouped as --help shows them. Trial settings (--set) and data_dir join the trials' settings;
# smoke shrinks the trials; the rest are SweepOptions' fields.
OPTIONS = (
    Option("address", TEXT, None, "a running Ray cluster (HOST:PORT, ray://..., auto)",
           "$RAY_ADDRESS if set, else start Ray on this machine, on 127.0.0.1", "resources"),
    Option("num_cpus", COUNT, None, "CPUs of the local Ray", "all", "resources"),
    Option("cpus_per_trial", POSITIVE, 1.0, "CPUs of one trial; torch threads follow it",
           section="resources"),
    Option("num_gpus", AMOUNT, 0.0, "GPUs to use (0: CPU only)", section="resources"),
    # With GPUs and no fraction given, 4 trials share a card (small members leave it idle):
    # None stands for that rule, which SweepOptions applies (gpu_share).
    Option("gpus_per_trial", AMOUNT, None, "fraction of a GPU per trial",
           "0.25 with GPUs: 4 trials share one; 0 without", "resources"),
    Option("max_concurrent", COUNT, None, "at most this many trials at once",
           "as many as the CPUs and GPUs fit", "resources"),
    Option("max_failures", RETRIES, 2, "retries of a failed trial", section="resources"),
    Option("node_wait_s", SECONDS, None, "how long to wait for a node that fits a trial",
           "0 locally; 600 s on a cluster, whose autoscaler may start from no worker",
           "resources"),
    Option("pack", PACK, "auto",
           "auto: tabular configurations that can share a member stack train together, one "
           "Ray trial per pack; on: image ones too (the epsilons of one kind, M and split; "
           "slower per member on an H100, docs/sweeps.md); off: one configuration per trial",
           section="resources"),
    Option("mps", MPS, "auto",
           "auto: trials sharing a GPU of the Ray this sweep starts run under a CUDA MPS daemon "
           "of its own, their kernels at once (1.6-1.8x on an H200, docs/sweeps.md), where "
           "nvidia-cuda-mps-control exists; on: the same, or refused; off: the GPU takes turns "
           "between trials", section="resources"),
    Option("storage", TEXT, "results", "parent directory or pyarrow URI (s3://bucket/prefix) "
           "of the sweep's results directory"),
    Option("name", TEXT, None, "the sweep's name", "DATASET-GRID[-smoke]"),
    Option("resume", FLAG, False, "continue the sweep of this name", section=None),
    Option("mlflow_uri", TEXT, None, "MLflow tracking URI",
           "a sqlite store inside the results directory"),
    Option("mlflow", FLAG, True, "do not log to MLflow", flag="--no-mlflow", negated=True),
    Option("verbose", FLAG, False, "show Ray/MLflow/Optuna INFO logs"),
    Option("dry_run", FLAG, False, "list the trials and resources; run nothing", section=None),
    Option("smoke", FLAG, False, "a tiny version of the same sweep (what a command's flags "
           "name, e.g. --seeds 2, is kept as given)", runner=False),
    Option("data_dir", FOLDER, None, "local data directory",
           "SBFN_DATA_DIR, then cache/download", runner=False),
    Option("search", SEARCH, "grid", "grid: every point of the grid; optuna: Optuna's TPE over "
           "its axes; random: random draws of them (a range axis, uniform(0, 1), needs one of "
           "these two)"),
    Option("num_samples", COUNT, 20, "configurations drawn (--search optuna or random)"),
    Option("search_seed", SEED, 0, "seed of the draws (--search optuna or random)"),
    Option("keep_models", KEEP, "none", "best: keep the fitted models of the best "
           "configuration's folds under <results>/models/, which `python -m sweeps.export "
           "--fold K` then saves without refitting; none: keep none (an export refits)"),
    Option("objective", TEXT, "", "model that search, 'best so far' and the best configuration "
           "use", f"{OBJECTIVES['regression']} for regression, {OBJECTIVES['classification']} "
           "for classification; on --resume, the sweep's own"),
    # A file's `settings` mapping; on the command line KEY=VALUE words, not a ListOf: a
    # setting's own list value holds commas (--set lambda2=0,3,5).
    Option("settings", MAPPING, None, "trial settings for every trial they apply to (e.g. --set "
           "epochs=3 n_train=5000); one that applies to no trial is refused. Every setting, its "
           "default and where it applies: --list-fields", "none", flag="--set", runner=False),
)
BY_NAME = {o.name: o for o in OPTIONS}
# SweepOptions' defaults (sweeps/engine/plan/planning.py reads them from here).
DEFAULTS = {o.name: o.default for o in OPTIONS if o.runner}


def gpu_share(gpus_per_trial: float | None, num_gpus: float) -> float:
    """A trial's GPU fraction: the one given, else 0.25 with GPUs (4 trials share a card,
    as small members leave it idle), else 0."""
    if gpus_per_trial is not None:
        return gpus_per_trial
    return 0.25 if num_gpus else 0.0


def named(name: str, in_file: bool) -> str:
    """A run option as the user gave it, for a refusal: its sweep-file key where a file set it
    (resources.num_gpus), else its flag (--num-gpus): a value is blamed where it was typed."""
    option = BY_NAME[name]
    return option.file_key if in_file and option.file_key else option.flag_name


def spelt(name: str, value, in_file: bool) -> str:
    """A run option with a value as the user writes it: `--num-gpus N` on a command line,
    `resources.num_gpus: N` in a sweep file."""
    return f"{named(name, in_file)}{': ' if in_file else ' '}{value}"


def cuda_gpus() -> int:
    """This machine's CUDA GPUs (torch imported only here: a sweep without GPUs never loads it
    in its driver)."""
    import torch
    return torch.cuda.device_count()


def file_key_of(field: str) -> str:
    """A refusal's field as a sweep file names it: --num-gpus is resources.num_gpus there, --seeds
    seeds; a field that is no flag stays as it is."""
    if not field.startswith("--"):
        return field
    option = next((o for o in OPTIONS if o.flag_name == field), None)
    return option.file_key if option and option.file_key else field[2:].replace("-", "_")


def file_keys(section: str) -> dict:
    """The sweep-file keys of one section ("" top level, "resources") -> their Kind."""
    return {o.name: o.kind for o in OPTIONS if o.section == section}


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Every option's flag, in a group of its own. Each defaults to None: not given."""
    group = parser.add_argument_group("where and how to run")
    for o in OPTIONS:
        if o.name == "settings":
            group.add_argument(o.flag_name, dest=o.name, nargs="+", action="extend",
                               metavar="KEY=VALUE", help=o.help_text())
        elif o.kind is FLAG:
            group.add_argument(o.flag_name, dest=o.name, action="store_const",
                               const=not o.negated, help=o.help_text())
        else:
            group.add_argument(o.flag_name, dest=o.name, type=o.kind.flag,
                               choices=o.kind.choices, help=o.help_text())


def given(args: argparse.Namespace) -> dict:
    """The options given as flags, by name, as a file would hold them (--set as a mapping)."""
    values = {o.name: getattr(args, o.name, None) for o in OPTIONS}
    values = {k: v for k, v in values.items() if v is not None}
    if "settings" in values:
        values["settings"] = parse_assignments(values["settings"])
    return values


def into_definition(definition: dict, values: dict) -> dict:
    """A sweep definition with `values` (options by name) at their keys, replacing the file's;
    trial settings join the file's, one by one. A file's `resources` or `settings` that is no
    mapping stays as it is, for the checks to refuse by its key."""
    out = dict(definition)
    resources = {k: v for k, v in values.items() if BY_NAME[k].section == "resources"}
    out.update({k: v for k, v in values.items() if BY_NAME[k].section == "" and k != "settings"})
    if "settings" in values and isinstance(out.get("settings") or {}, dict):
        out["settings"] = {**(definition.get("settings") or {}), **values["settings"]}
    if resources and isinstance(out.get("resources") or {}, dict):
        out["resources"] = {**(definition.get("resources") or {}), **resources}
    return out
