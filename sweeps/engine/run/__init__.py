"""Floor 2 of the engine, running it: Tune's function trainable (trainable.py) and a trial's
work on its worker (trial.py, the one room that imports torch, from the trainable where a trial
runs), what a trial reports (fold_means.py) and keeps (kept.py), the driver's progress callbacks
(progress.py), Ray's resources and signals (resources.py), CUDA MPS (mps.py), the claim on a
results directory (claim.py) and Tune's searchers (search.py)."""
