"""`python -m analysis.report results/<sweep>|URI [more...] [--out DIR]` -> report.md, a
self-contained report.html (figures embedded), tables/*.csv and figures/*.png. Works on partial
sweeps (it says what is missing), on several sweeps at once, on local paths and on the URIs the
sweeps' --storage takes. Definitions: docs/analysis.md.

The report opens on its contents, each model at its best configuration (the answer the sweep's
end table printed), the verdicts and the sweeps read; then each section (regression, image
ensembles, tabular classification): per data set its figures, then the tables that compare the
models; the long tables (pairs, per-(M, ε) intervals, configurations, status) close it under
"Detailed tables". It is built in a temporary directory and copied into --out only once
complete; an --out that cannot hold it is refused in one line, and nothing is left written.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

from analysis import sections
from analysis.collect import (Results, ResultsError, is_remote, load_results, open_location,
                             RESULTS_FILE, sweep_directory)
from analysis.document import Contents, Heading, Table, Text, html_page, markdown, write_tables
from analysis.stats import (DEFAULT_TEST, TESTS, PairedTest, PairedTestError,
                            paired_test_of)
from sbfn_dist.errors import Parser

TITLE = "sbfn-dist results report"
REPORT_DIRS = ("figures", "tables")


class OutError(ValueError):
    """--out cannot hold the report; the message names the path and the fix."""


def by_section(ok) -> dict:
    """The ok rows of each section: regression, image ensembles, tabular classification."""
    image, tabular = sections.split_classification(ok[ok["task"] == "classification"])
    return {"regression": ok[ok["task"] == "regression"], "image": image, "tabular": tabular}


SECTIONS = {"regression": ("Regression", sections.regression_section),
            "image": ("Image ensembles", sections.image_section),
            "tabular": ("Tabular classification", sections.tabular_section)}


def section_blocks(results: Results, test: PairedTest = PairedTest(),
                   figdir: Path | None = None) -> list:
    """Each section with rows: its heading, then its blocks (figures only with a figdir)."""
    blocks = []
    for name, part in by_section(results.ok).items():
        if not part.empty:
            title, build = SECTIONS[name]
            blocks += [Heading(title), *build(part, results.not_ok, test, figdir,
                                              results.searched)]
    return blocks or [Text("No row has status ok: there is nothing to summarise yet.")]


def table_blocks(results: Results, test: PairedTest = PairedTest()) -> list:
    """Every table of the report, without figures (what benchmarks/bench_report.py times)."""
    return (sections.best_blocks(results) + sections.overview_blocks(results)
            + sections.verdict_blocks(results, test) + section_blocks(results, test)
            + sections.status_blocks(results))


def document(results: Results, figdir: Path, test: PairedTest = PairedTest()) -> list:
    """The whole report: title, contents, the best configurations (the sweep's own answer), the
    verdicts, the sweeps read, the sections with their figures and key tables, then the
    detailed tables under the name of the section each came from."""
    head = [Heading(TITLE, 1), Text(f"Sweeps: {', '.join(s.name for s in results.sweeps)}. "
                                    f"Generated {time.strftime('%Y-%m-%d %H:%M')} from "
                                    f"{len(results.table)} result rows."), Contents()]
    body, details, section = [], {}, ""
    for b in (sections.best_blocks(results) + sections.verdict_blocks(results, test)
              + sections.overview_blocks(results) + section_blocks(results, test, figdir)):
        if isinstance(b, Heading) and b.level == 2:
            section = b.text
        if isinstance(b, Table) and b.detail:
            details.setdefault(f"{section}: further tables", []).append(b)
        else:
            body.append(b)
    details["Trial status"] = sections.status_blocks(results)
    closing = [block for title, tables in details.items()
               for block in (Heading(title, 3), *tables)]
    return head + body + [Heading("Detailed tables"), *closing]


def write_report(paths, out: Path | None = None, test: PairedTest = PairedTest()) -> Path:
    """Build the report of one or more results paths or URIs into `out` (default_out).

    Raises ResultsError for results it cannot read and OutError for an `out` it cannot write;
    either way nothing is written (directories it created are removed again)."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    paths = [sweep_directory(str(p)) for p in paths]        # a sweep's parts/: the sweep
    out = Path(out) if out else default_out(paths[0])
    check_out(out)
    results = load_results(paths, relative_to=out)
    made = make_dirs(out)                   # fails here, before any work, where out is unwritable
    try:
        with tempfile.TemporaryDirectory(prefix="sbfn-report-") as tmp:
            build = Path(tmp)
            blocks = document(results, build / "figures", test)
            write_tables(blocks, build)
            (build / "report.md").write_text(markdown(blocks, build))
            (build / "report.html").write_text(html_page(blocks, TITLE))
            publish(build, out)
    except BaseException:
        _remove(made)
        raise
    return out


def check_out(out: Path) -> None:
    """Refuse an `out` that is a file, lies under a file, or cannot be written, before any
    work (os.access cannot tell for root: make_dirs finds out by creating)."""
    if out.exists() and not out.is_dir():
        raise OutError(f"--out {out} is an existing file; pass a directory (new or existing) "
                       "for report.md, report.html, tables/ and figures/")
    existing = next(p for p in (out, *out.parents) if p.exists())
    if not existing.is_dir():
        raise OutError(f"cannot write the report to {out}: {existing} is a file, not a "
                       "directory; pass --out a directory path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutError(f"cannot write the report to {out}: {existing} is not writable; pass "
                       "--out a directory you can write")


def make_dirs(out: Path) -> list:
    """Create out, its missing parents and its report sub-directories; returns those created
    (for a roll-back), or raises OutError having removed them again."""
    made = []
    try:
        for d in (*reversed(out.parents), out, *(out / s for s in REPORT_DIRS)):
            if not d.is_dir():
                d.mkdir()
                made.append(d)
    except OSError as exc:
        _remove(made)
        raise _unwritable(out, exc) from None
    return made


def publish(build: Path, out: Path) -> None:
    """Copy the finished report into `out`, each file through a temporary name and an atomic
    rename, so a reader never sees half a file."""
    try:
        for src in sorted(p for p in build.rglob("*") if p.is_file()):
            dest = out / src.relative_to(build)
            part = dest.with_name(dest.name + ".part")
            shutil.copyfile(src, part)
            os.replace(part, dest)
    except OSError as exc:
        raise _unwritable(out, exc) from None


def _unwritable(out: Path, exc: OSError) -> OutError:
    where = f"{exc.filename}: " if exc.filename else ""
    return OutError(f"cannot write the report to {out} ({where}{exc.strerror or exc}); pass "
                    "--out a directory you can write")


def _remove(made: list) -> None:
    for d in reversed(made):
        shutil.rmtree(d, ignore_errors=True)


def default_out(first: str) -> Path:
    """<sweep dir>/report for a local sweep (or parquet file: beside it); for a remote one
    (s3://...) `<sweep>-report` in the working directory: the report is written locally."""
    if is_remote(first):
        return Path(f"{PurePosixPath(first.rstrip('/')).name}-report")
    local = Path(open_location(first)[1])
    # a results.parquet directory of parts is a table, as its file is: beside it, not inside
    table = not local.is_dir() or local.name == RESULTS_FILE
    return (local.parent if table else local) / "report"


def read_instead(paths) -> list:
    """One line per path read as another: a sweep's parts/ folder is read as its sweep
    (collect.sweep_directory), as a results.parquet path is."""
    return [f"note: {p} is the parts/ folder of the sweep {d}: reading the sweep {d}"
            for p in paths if (d := sweep_directory(p)) != p]


def main(argv=None) -> int:
    parser = Parser(prog="python -m analysis.report", description=__doc__,
                    allow_abbrev=False)
    parser.add_argument("results", nargs="+", help="results/<sweep> directories, parquet paths, "
                        "or URIs as the sweeps' --storage takes (s3://bucket/prefix/<sweep>)")
    parser.add_argument("--out", type=Path, default=None, help="report directory (default: "
                        "<first results dir>/report; <sweep>-report here for a URI)")
    parser.add_argument("--test", choices=tuple(TESTS), default=DEFAULT_TEST,
                        help=f"the paired test of every comparison (default {DEFAULT_TEST}): "
                        + "; ".join(f"{name}: {says}" for name, (_, says) in TESTS.items()))
    parser.add_argument("--rope", type=float, default=None, help="with --test bayes: the region "
                        "of practical equivalence [-ROPE, ROPE] in the metric's units (accuracy "
                        "as a fraction: 0.01 is one point)")
    args = parser.parse_args(argv)
    try:
        for line in read_instead(args.results):
            print(line)
        out = write_report(args.results, args.out, paired_test_of(args.test, args.rope))
    except (ResultsError, OutError, PairedTestError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"report written to {out}/report.md and {out}/report.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
