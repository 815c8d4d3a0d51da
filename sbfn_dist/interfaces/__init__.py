"""The library's front ends: scikit-learn estimators (`estimators`), the one-trial command
(`cli`, run as `python -m sbfn_dist`), what every command shares (`usage`) and the end-of-run
table (`summary`)."""
