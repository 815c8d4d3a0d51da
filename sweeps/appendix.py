"""The paper's appendix "Comparison of Basis Function Strategies", in one command.

    python -m sweeps.appendix [--out DIR] [--runs 5] [--m 2 5 10 20 50]

M in {2, 5, 10, 20, 50} x {GBF, RBF-KMeans} x 5 runs of s-BFN least squares on "sincos"
(sbfn_dist.appendix); the records go to DIR/results.parquet, the units' centres of run 0 to
DIR/centres.parquet with the training points in DIR/points.parquet, and analysis.appendix then
writes the table and both figures to DIR/report. Runs in this process (50 small trainings take
about a minute): no Ray needed.
"""

import argparse
import time
from pathlib import Path

import pandas as pd

from analysis.appendix import write_appendix
from sbfn_dist.appendix import M_VALUES, RUNS, SWEEP, centres, run_trials


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sweeps.appendix", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("results") / SWEEP)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--m", type=int, nargs="+", default=list(M_VALUES))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    run_trials(args.m, args.runs).to_parquet(args.out / "results.parquet")
    found = [centres(m) for m in args.m]
    pd.concat([c for c, _ in found]).to_parquet(args.out / "centres.parquet")
    found[0][1].to_parquet(args.out / "points.parquet")
    report = write_appendix(args.out)
    print(f"appendix: {args.runs} runs x M in {args.m} in {time.perf_counter() - start:.0f} s; "
          f"report in {report}")


if __name__ == "__main__":
    main()
