"""Benchmarks: speed ratios measured side by side in one run (`python -m benchmarks [--quick]`).

Every figure is a ratio of two sides timed in turn on the same machine in the same run (the
median of several repeats), never an absolute time to assert on: see docs/benchmarks.md.
"""
