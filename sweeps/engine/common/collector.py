"""Python's cyclic garbage collector around the big imports of a process a sweep owns.

Importing torch, scikit-learn and Ray Tune makes a few hundred thousand long-lived objects and
next to no garbage, and the collector, run every 700 new objects, walks the growing heap again
and again: 0.66 of the 3.3 CPU-s a trial worker spends importing what it trains with (879
collections). Paused for the import, it would walk it all once at its next full collection;
frozen after it, never: a worker's imports and a tiny trial's kind of work 4.98 -> 3.31 CPU-s
(docs/benchmarks.md §11.7). Frozen objects are never collected, so the garbage the import left is kept (a little,
once); only a process the sweep owns does this (a trial worker; the test processes): a user's
own process, a notebook's, keeps its collector as it was.
"""

import contextlib
import gc


@contextlib.contextmanager
def import_then_freeze():
    """The block (imports) runs with the collector paused; then everything the process holds is
    frozen (gc.freeze: left out of every later collection) and the collector resumed as it was."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_on:
            gc.enable()
