"""`python -m analysis.report results/<sweep>|URI [more...] [--out DIR]` -> report.md, a
self-contained report.html (figures embedded), tables/*.csv and figures/*.png. Works on partial
sweeps (it says what is missing), on several sweeps at once, on local paths and on the URIs the
sweeps' --storage takes. Definitions: docs/analysis.md."""

import argparse
import sys
import time
from pathlib import Path, PurePosixPath

from analysis import sections
from analysis.collect import Results, ResultsError, is_remote, load_results, open_location
from analysis.document import Heading, Text, html_page, markdown, write_tables
from analysis.stats import TESTS

TITLE = "sbfn-dist results report"


def by_section(ok) -> dict:
    """The ok rows of each section: regression, image ensembles, tabular classification."""
    image, tabular = sections.split_classification(ok[ok["task"] == "classification"])
    return {"regression": ok[ok["task"] == "regression"], "image": image, "tabular": tabular}


def table_blocks(results: Results, test: str = "t") -> list:
    """Every table of the report (no figures): bookkeeping, then each section with rows."""
    blocks = sections.status_blocks(results)
    rows = by_section(results.ok)
    if not rows["regression"].empty:
        blocks += sections.regression_tables(rows["regression"], results.not_ok, test)
    if not rows["image"].empty:
        blocks += sections.image_tables(rows["image"], test)
    if not rows["tabular"].empty:
        blocks += sections.tabular_tables(rows["tabular"], test)
    if all(part.empty for part in rows.values()):
        blocks.append(Text("No row has status ok: there is nothing to summarise yet."))
    return blocks


FIGURES = {"regression": sections.regression_figures, "image": sections.image_figures,
           "tabular": sections.tabular_figures}


def figure_blocks(results: Results, figdir: Path) -> list:
    blocks = [Heading("Figures")]
    for section, part in by_section(results.ok).items():
        if not part.empty:
            blocks += FIGURES[section](part, figdir)
    return blocks


def write_report(paths, out: Path | None = None, test: str = "t") -> Path:
    """Build the report of one or more results paths or URIs into `out` (default_out)."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out = Path(out) if out else default_out(str(paths[0]))
    results = load_results(paths, relative_to=out)
    out.mkdir(parents=True, exist_ok=True)
    names = ", ".join(s.name for s in results.sweeps)
    blocks = [Heading(TITLE, 1), Text(f"Sweeps: {names}. Generated {time.strftime('%Y-%m-%d %H:%M')} "
                                      f"from {len(results.table)} result rows.")]
    blocks += table_blocks(results, test) + figure_blocks(results, out / "figures")
    write_tables(blocks, out)
    (out / "report.md").write_text(markdown(blocks, out))
    (out / "report.html").write_text(html_page(blocks, TITLE))
    return out


def default_out(first: str) -> Path:
    """<sweep dir>/report for a local sweep (or parquet file: beside it); for a remote one
    (s3://...) `<sweep>-report` in the working directory: the report is written locally."""
    if is_remote(first):
        return Path(f"{PurePosixPath(first.rstrip('/')).name}-report")
    local = Path(open_location(first)[1])
    return (local if local.is_dir() else local.parent) / "report"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.report", description=__doc__)
    parser.add_argument("results", nargs="+", help="results/<sweep> directories, parquet paths, "
                        "or URIs as the sweeps' --storage takes (s3://bucket/prefix/<sweep>)")
    parser.add_argument("--out", type=Path, default=None, help="report directory (default: "
                        "<first results dir>/report; <sweep>-report here for a URI)")
    parser.add_argument("--test", choices=TESTS, default="t", help="paired test of the ranking")
    args = parser.parse_args(argv)
    try:
        out = write_report(args.results, args.out, args.test)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"report written to {out}/report.md and {out}/report.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
