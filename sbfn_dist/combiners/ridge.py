"""Closed-form ridge solutions for a whole lambda2 path from one factorisation.

alpha(lambda2) = (Phi^T Phi + lambda2 I)^-1 Phi^T y (paper, Eq. "weights"). With the
eigendecomposition Phi^T Phi = V diag(e) V^T (one Gram matrix, one K x K eigh) this is
V diag(1 / (e + lambda2)) V^T Phi^T y: every lambda2 costs two K x K products. lambda2 = 0 is
the truncated pseudo-inverse: eigenvalues below rcond * e_max (singular values below
sqrt(rcond) * s_max) are dropped, so a singular Phi^T Phi (duplicate members) gives the
minimum-norm least-squares solution instead of an overflow.
"""

import numpy as np


def ridge_path(phi: np.ndarray, y: np.ndarray, lambdas, intercept: bool = False,
               rcond: float = 1e-10):
    """Coefficients (L, K) and intercepts (L,) for each lambda2; the intercept is not penalised."""
    phi = np.asarray(phi, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    phi_mean = phi.mean(0) if intercept else np.zeros(phi.shape[1])
    y_mean = y.mean() if intercept else 0.0
    centred = phi - phi_mean if intercept else phi
    evals, evecs = np.linalg.eigh(centred.T @ centred)
    proj = evecs.T @ (centred.T @ (y - y_mean))
    keep = evals > rcond * max(evals.max(initial=0.0), 0.0)
    coefs = []
    for lam in lambdas:
        if lam < 0:
            raise ValueError(f"lambda2 must be >= 0, got {lam}")
        inv = np.divide(1.0, evals + lam, out=np.zeros_like(evals), where=keep | (lam > 0))
        coefs.append(evecs @ (inv * proj))
    coefs = np.array(coefs)
    return coefs, y_mean - coefs @ phi_mean
