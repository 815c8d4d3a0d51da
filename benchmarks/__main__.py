"""Run every benchmark in sequence: `python -m benchmarks [--quick]` (see docs/benchmarks.md)."""

from benchmarks import (bench_generic_stack, bench_image_cpu, bench_image_members, bench_members,
                        bench_online, bench_packing, bench_report, bench_ridge_path, bench_sweep,
                        bench_torchensemble, bench_trial_overhead)
from benchmarks.common import cli, machine


def main() -> None:
    quick = cli(__doc__.splitlines()[0]).quick
    print(machine() + (" (quick smoke sizes)" if quick else ""))
    for module in (bench_members, bench_online, bench_packing, bench_ridge_path, bench_image_members,
                   bench_image_cpu, bench_generic_stack, bench_torchensemble, bench_report,
                   bench_sweep, bench_trial_overhead):
        module.run(quick)


if __name__ == "__main__":
    main()
