"""Closed-form ridge solutions for a whole lambda2 path from one factorisation.

alpha(lambda2) = (Phi^T Phi + lambda2 I)^-1 Phi^T y (paper, Eq. "weights"). With the thin SVD
Phi = U S V^T this is V diag(s / (s^2 + lambda2)) U^T y: one SVD serves every lambda2, and
lambda2 = 0 becomes the minimum-norm least-squares solution (singular values below
rcond * s_max are dropped) instead of inverting a singular Phi^T Phi.
"""

import numpy as np


def ridge_path(phi: np.ndarray, y: np.ndarray, lambdas, intercept: bool = False,
               rcond: float = 1e-10):
    """Coefficients (L, K) and intercepts (L,) for each lambda2; the intercept is not penalised."""
    phi = np.asarray(phi, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    phi_mean = phi.mean(0) if intercept else np.zeros(phi.shape[1])
    y_mean = y.mean() if intercept else 0.0
    u, s, vt = np.linalg.svd(phi - phi_mean, full_matrices=False)
    uty = u.T @ (y - y_mean)
    keep = s > rcond * (s[0] if len(s) else 0.0)
    coefs = []
    for lam in lambdas:
        if lam < 0:
            raise ValueError(f"lambda2 must be >= 0, got {lam}")
        shrink = np.where(keep, s / (s * s + lam), 0.0) if lam == 0 else s / (s * s + lam)
        coefs.append(vt.T @ (shrink * uty))
    coefs = np.array(coefs)
    return coefs, y_mean - coefs @ phi_mean
