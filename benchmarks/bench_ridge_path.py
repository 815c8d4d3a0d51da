"""The lambda2 path from one eigendecomposition of the Gram matrix (`ridge_path`) vs one linear solve per lambda2.

Separate solves: alpha = solve(Phi^T Phi + lambda2 I, Phi^T y) for every lambda2, and the
minimum-norm least-squares solution (`np.linalg.lstsq`) at lambda2 = 0, where Phi^T Phi may
be singular. Phi is Gaussian features of strongly correlated member predictions, like the
s-BFN design matrix. BLAS limited to one thread.
"""

import numpy as np

from sbfn_dist.combiners.ridge import ridge_path

from benchmarks.common import cli, compare, median, paired_ratio, table, threads

LAMBDAS = (0.0, 3.0, 5.0, 7.0)
SHAPES = ((8000, 20), (8000, 71))


def design(n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    target = rng.standard_normal(n)
    preds = target[:, None] + 0.3 * rng.standard_normal((n, k))          # k correlated members
    phi = np.exp(-(preds - preds.mean(0)) ** 2 / (2 * preds.var(0)))
    return phi, target


def separate_solves(phi, y, lambdas=LAMBDAS):
    out = []
    for lam in lambdas:
        if lam == 0:
            out.append(np.linalg.lstsq(phi, y, rcond=None)[0])
        else:
            out.append(np.linalg.solve(phi.T @ phi + lam * np.eye(phi.shape[1]), phi.T @ y))
    return np.array(out)


def run(quick: bool = False) -> list:
    repeats = 3 if quick else 21
    rows = []
    with threads(1):
        for n, k in SHAPES:
            phi, y = design(n, k)
            path, _ = ridge_path(phi, y, LAMBDAS)
            sep = separate_solves(phi, y)
            same = all(np.allclose(path[i], sep[i], rtol=1e-6, atol=1e-9)
                       for i, lam in enumerate(LAMBDAS) if lam > 0)
            t = compare({"path": lambda: ridge_path(phi, y, LAMBDAS),
                         "separate": lambda: separate_solves(phi, y)}, repeats)
            rows.append({"shape": (n, k), "path_ms": 1e3 * median(t["path"]),
                         "separate_ms": 1e3 * median(t["separate"]),
                         "ratio": paired_ratio(t["separate"], t["path"]), "allclose": same})
    table(f"Ridge path lambda2 in {list(LAMBDAS)}: one factorisation vs {len(LAMBDAS)} separate solves "
          f"(1 BLAS thread, median of {repeats} interleaved repeats)",
          ["Phi shape", "path ms", "separate ms", "separate/path", "same alpha (lambda2 > 0)"],
          [[f"{r['shape'][0]} x {r['shape'][1]}", f"{r['path_ms']:.2f}", f"{r['separate_ms']:.2f}",
            f"{r['ratio']:.2f}x", "yes" if r["allclose"] else "NO"] for r in rows])
    for r in rows:
        print(f"RESULT ridge path {r['shape'][0]} x {r['shape'][1]}: {r['ratio']:.2f}x vs separate "
              f"solves; alpha allclose for lambda2 > 0: {r['allclose']}")
    return rows


if __name__ == "__main__":
    run(cli(__doc__.splitlines()[0]).quick)
