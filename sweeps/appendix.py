"""The paper's appendix "Comparison of Basis Function Strategies", in one command.

    python -m sweeps.appendix [--out DIR] [--runs 5] [--members 2 5 10 20 50]

M in {2, 5, 10, 20, 50} x {GBF, RBF-KMeans} x 5 runs of s-BFN least squares on "sincos"
(sweeps.commands.basis_trials); the records go to DIR/results.parquet, the units' centres of run 0
to DIR/centres.parquet with the training points in DIR/points.parquet, and analysis.basis_comparison
then writes the table and both figures to DIR/report. Runs in this process (50 small trainings take
about a minute): no Ray needed.
"""

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import argparse
import time
from pathlib import Path

import pandas as pd

from analysis.basis_comparison import write_appendix
from sbfn_dist.errors import Parser
from sbfn_dist.interfaces.usage import HelpFormatter, ListOf, bounded
from sweeps.commands.basis_trials import M_VALUES, RUNS, SWEEP, centres, run_trials


def main(argv=None) -> None:
    parser = Parser(prog="python -m sweeps.appendix", description=__doc__,
                    formatter_class=HelpFormatter, allow_abbrev=False)
    parser.add_argument("--out", type=Path, default=Path("results") / SWEEP,
                        help="directory of the records and the report")
    parser.add_argument("--runs", type=int, default=RUNS, help="runs per (M, basis)")
    # --m: the spelling before every sweep's M values became --members
    parser.add_argument("--members", "--m", action=ListOf, item=bounded(int, 1, 1000, "M values"),
                        help=f"M values (default: {' '.join(map(str, M_VALUES))})")
    args = parser.parse_args(argv)
    members = args.members or list(M_VALUES)
    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    run_trials(members, args.runs).to_parquet(args.out / "results.parquet")
    found = [centres(m) for m in members]
    pd.concat([c for c, _ in found]).to_parquet(args.out / "centres.parquet")
    found[0][1].to_parquet(args.out / "points.parquet")
    report = write_appendix(args.out)
    print(f"appendix: {args.runs} runs x M in {members} in {time.perf_counter() - start:.0f} s; "
          f"report in {report}")


if __name__ == "__main__":
    main()
