"""Command-line options shared by every sweep command, and the error handling around them.

Bad input ends with one `error: ...` line that names the problem and the fix (exit 2); a sweep
whose trials failed after their retries lists them and exits 1; an interrupted sweep tells how
to resume it.
"""

import argparse
import os
import shlex
import signal
import sys

from sbfn_dist.errors import Parser, SbfnError, near_misses
from sbfn_dist.interfaces.usage import (HelpFormatter, ListOf, add_list_fields,
                                        number_of)
from sbfn_dist.settings.fields import TRIAL_FIELDS as SETTINGS, Int, field
from sweeps.engine.plan.grid_trials import smoke
from sweeps.engine.plan.options import add_flags, given
from sweeps.engine.plan.planning import SweepOptions, result_store
from sweeps.engine.plan.ranges import refuse_range_flag
from sweeps.engine.plan.sweepfile import sweep_options
from sweeps.engine.run.interruption import sigterm_as_ctrl_c
from sweeps.engine.summary import failed_trials
from sweeps.engine.sweep import run_sweep


# A command's flag that lists a grid axis' values -> the setting it lists: the flag's plural is
# the setting's only other name (docs/sweeps.md). The setting's type, range and default are
# declared once, in sbfn_dist/settings/fields.py.
AXIS_FLAGS = {"members": "n_members", "epsilons": "epsilon", "ensembles": "ensemble"}


def values_flag(setting: str, what: str) -> dict:
    """add_argument's keywords for a flag that lists a numeric setting's values (--epsilons 0
    0.5, --lambda2 0 5): numbers of the setting's kind, whose range the plan checks as it checks
    a sweep file's; a range (uniform(0, 1)) is refused naming where ranges go, not cut at a
    comma."""
    check = field(setting).check
    kind = int if isinstance(getattr(check, "inner", check), Int) else float
    return dict(action=ListOf, whole=refuse_range_flag, item=number_of(kind, what))


def given_axes(args, **converted) -> dict:
    """The axes the command's flags list (AXIS_FLAGS), by their settings' names; `converted`:
    a flag's values as the setting stores them (ensembles=...)."""
    values = {flag: converted.get(flag, getattr(args, flag, None)) for flag in AXIS_FLAGS}
    return {AXIS_FLAGS[flag]: v for flag, v in values.items() if v is not None}


class SweepParser(Parser):
    """A sweep command's parser: an unknown flag is told the flag it is a typo of (--epsilons
    without its s), or, if it names a setting (target), that settings go through --set."""

    def parse_args(self, args=None, namespace=None):
        """argparse's own, with the hint after its "unrecognized arguments" line."""
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            flags = [a for a in unknown if a.startswith("--")]
            hint = unknown_flag_hint(flags[0], _flags_of(self)) if flags else ""
            self.error(f"unrecognized arguments: {' '.join(unknown)}"
                       + (f" ({hint})" if hint else ""))
        return parsed


def _flags_of(parser: argparse.ArgumentParser) -> list[str]:
    """The parser's long options and its sub-commands' (`python -m sweeps run`'s are on `run`).
    argparse lists them only in its private tables (stable since Python 3.2)."""
    flags = [f for f in parser._option_string_actions if f.startswith("--")]
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        flags += [f for sub in action.choices.values() for f in _flags_of(sub)]
    return flags


# A typo: as close as --stroage to --storage (difflib's ratio 0.89); --epochs and --search (0.63)
# are different words.
TYPO = 0.8


def unknown_flag_hint(flag: str, flags: list[str]) -> str:
    """What an unknown long option most likely meant: a flag it is a typo of, else a setting;
    "" for neither (the parser's error line says where every option is listed)."""
    flag = flag.partition("=")[0]
    close = near_misses(flag, flags, TYPO)
    if close:
        return f"did you mean {close[0]}?"
    name = flag.removeprefix("--").replace("-", "_")
    setting = near_misses(name, SETTINGS, TYPO)
    if setting:
        return f"{setting[0]} is a setting, not a flag: --set {setting[0]}=VALUE"
    return ""


def common_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A sweep command's parser with every run option (sweeps/engine/plan/options.py) and --list-fields;
    no abbreviations: a misspelt flag that starts a real one (the epsilon of --epsilons) is
    refused, not silently taken for it."""
    p = SweepParser(prog=prog, description=description, formatter_class=HelpFormatter,
                    allow_abbrev=False)
    add_flags(p)
    add_list_fields(p)
    return p


def options(args, default_name: str) -> SweepOptions:
    """The flags as SweepOptions, translated as sweep files are (sweeps/engine/plan/sweepfile.py)."""
    values = given(args)
    return sweep_options(values, default_name=default_name, smoke=values.get("smoke", False),
                         overrides=values.get("settings", {}), command=command_line())


def command_line() -> str:
    """This process's command, as a shell would take it back (recorded in sweep.json)."""
    return " ".join(shlex.quote(a) for a in sys.argv)


# A command's flag -> what of the sweep it names, which --smoke keeps as given (grids.smoke).
SMOKE_KEEPS = {"folds": "folds", "seeds": "seed", "splits": "fold", "competitors": "competitors",
               **AXIS_FLAGS}


def given_to_smoke(args) -> frozenset:
    """What the command's flags named of the sweep (SMOKE_KEEPS), for smoke to keep."""
    return frozenset(what for flag, what in SMOKE_KEEPS.items()
                     if getattr(args, flag, None) is not None)


def run(build, argv=None) -> int:
    """`build(argv) -> (spec, args, opts)`; runs it and turns errors into one clear line."""
    opts = None
    try:
        with sigterm_as_ctrl_c():       # while it plans: the one line below, not a silent 143
            spec, args, opts = build(argv)
            if args.smoke:
                spec = smoke(spec, given_to_smoke(args))
            outcome = run_sweep(spec, opts)
        sys.stdout.flush()      # a reader that left (`| head`) shows here, not at Python's exit
    except SbfnError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted: {_what_is_kept(opts)}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_gone()
    failed = failed_trials(outcome.table) if outcome else {}
    if failed:
        print(f"error: {len(failed)} trials failed after their retries (listed above with their "
              "errors); fix the cause, then rerun with --resume: it keeps every finished fold",
              file=sys.stderr)
        return 1
    return 0


def _what_is_kept(opts: SweepOptions | None) -> str:
    """What an interrupted command leaves: a sweep that started keeps its finished folds."""
    try:
        store = result_store(opts) if opts is not None else None
        started = store is not None and store.read_spec() is not None
        folds = started and store.has_parts()
    except Exception:       # a remote store out of reach: say what holds if it started
        started = folds = True
    if folds:
        return ("finished folds are in results.parquet; continue with the same command plus "
                "--resume")
    if started:
        return ("no fold had finished yet; continue with the same command plus --resume (the "
                "sweep is recorded: without --resume it is refused)")
    return "the sweep had not started; nothing was written"


def _reader_gone() -> int:
    """The reader of our output left (`--dry-run | head`): stop quietly, as Unix tools do, with
    the status of a process that SIGPIPE ended."""
    # Python would flush stdout again at exit and report that pipe broken too.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 128 + signal.SIGPIPE
