import jax, numpy as np, mpmath, scipy.special as sc
jax.config.update("jax_enable_x64", True)
import jax.scipy.special as jsp
mpmath.mp.dps = 40
xs = [1e-3, 0.5, 3.0, 9.5, 30.0, 1e2, 1e3, 1e5, 1e8, 1e15, 1e100, 1e200, 1e300, np.inf]
for n in [0, 1, 2, 3, 5, 10]:
    row_j, row_s = [], []
    for x in xs:
        t = float(mpmath.polygamma(n, x)) if np.isfinite(x) else (np.inf if n == 0 else 0.0)
        j = float(jsp.polygamma(n, x)) if n else float(jsp.digamma(x))
        s = float(sc.polygamma(n, x))
        rel = lambda a: abs(a - t) / abs(t) if t not in (0.0,) and np.isfinite(t) else (a, t)
        row_j.append(rel(j)); row_s.append(rel(s))
    print(n, "jax", ["%.1e" % r if isinstance(r, float) else r for r in row_j])
    print(n, "sci", ["%.1e" % r if isinstance(r, float) else r for r in row_s])
