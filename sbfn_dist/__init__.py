"""sbfn-dist: Structured Basis Function Networks (s-BFN) -- the library layer.

One trial, start to finish: data, splits, epsilon-modulated multi-hypothesis training,
combiners, competitors and tidy result records. No Ray and no MLflow in this package.
"""

__version__ = "0.1.0"
