"""Floor 5 of the house (with tracking/), what a sweep leaves: how its configurations rank
(ranking.py), a finished sweep read back (recorded.py), a configuration's model fitted again for
its export (refit.py), the kept models pruned to the best (keep_best.py) and the stored folds
an earlier version computed without a model this one writes (outdated.py). It imports nothing
of tracking/, which reads it."""
