"""Floor 4 of the house, running it: Tune's function trainable (trainable.py) and a trial's
work on its worker (trial.py, the one room that imports torch, from the trainable where a trial
runs), what a trial reports after each fold (fold_means.py: running means) and keeps (kept.py),
the driver's progress callbacks (progress.py), Ray's resources and signals (resources.py), CUDA
MPS (mps.py), the claim on a results directory (claim.py), Tune's searchers (search.py) and a dry
run's timing of an image grid's members (estimate.py: torch)."""
