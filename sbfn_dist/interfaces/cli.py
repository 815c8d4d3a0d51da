"""Run one trial from the command line and print the comparison table.

    python -m sbfn_dist dataset=air_quality folds=10 n_members=10 epsilon=0.35 \\
        lambda2=0,3,5,7 competitors=svm_rbf,random_forest --out records.csv

Each KEY=VALUE is a TrialConfig field; `--list-fields` prints them all with their defaults and
where they apply. Values are read as JSON where possible ("0.35", "true", "null"), and a comma
list becomes a list.
"""

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import pandas as pd

from sbfn_dist.errors import Parser, SbfnError, require_writable
from sbfn_dist.settings.fields import BY_NAME, Items
from sbfn_dist.interfaces.summary import comparison_table
from sbfn_dist.settings.tasks import TASKS
from sbfn_dist.interfaces.usage import HelpFormatter, add_list_fields

def is_list(key: str) -> bool:
    """A setting whose value is a list (fields.py: Items), so `key=` is the empty list."""
    return key in BY_NAME and isinstance(BY_NAME[key].check, Items)


# A call's text, e.g. a sweep's range uniform(0, 1): one value, its commas no list's.
CALL = re.compile(r"\s*[A-Za-z_][\w.]*\s*\([^()]*\)\s*")


def parse_value(key: str, text: str):
    if CALL.fullmatch(text):
        return text
    if is_list(key) or "," in text:
        return [parse_value("", part) for part in text.split(",") if part]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_assignments(items: list[str]) -> dict:
    config = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SbfnError(f"argument '{item}' is not KEY=VALUE (e.g. epsilon=0.35)")
        config[key] = parse_value(key, value)
    return config


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m sbfn_dist", description=__doc__,
               formatter_class=HelpFormatter, allow_abbrev=False)
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                   help="trial settings (every one and its default: --list-fields)")
    p.add_argument("--out", help="write every record to this CSV file (default: print the "
                   "comparison table only)")
    add_list_fields(p)
    return p


def check_out(path: str) -> Path:
    """--out as an absolute path, once a file could be written in its directory: checked before
    the trial trains, so that minutes of training never end in an unwritable path."""
    out = Path(path).expanduser().absolute()
    if out.is_dir():
        raise SbfnError(f"--out {path} is a directory: name a file in it, e.g. "
                        f"{out / 'records.csv'}")
    if not out.parent.is_dir():
        raise SbfnError(f"--out {path}: the directory {out.parent} does not exist; create it or "
                        "choose another path")
    require_writable(out.parent, f"--out {path}")
    return out


def write_csv(records: list[dict], out: Path) -> None:
    """Written under a temporary name and renamed: an interrupted write leaves no half file."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    pd.DataFrame(records).to_csv(tmp, index=False)
    os.replace(tmp, out)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        config = parse_assignments(args.assignments)
        out = check_out(args.out) if args.out else None
        start = time.perf_counter()
        from sbfn_dist.experiment import run_trial    # torch: not for --help or a bad flag
        records = run_trial(config)
    except SbfnError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    metric = TASKS[records[0]["task"]].metric
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print(comparison_table(records, metric).drop(columns=["label"]).to_string())
    if out:
        write_csv(records, out)
    print(f"{len(records)} records in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
