"""Deep and wide graphs (issue 16, point 10): no RecursionError, right values, bounded work.

- Deep: a 100,000-node chain t ← sin(t)·1.0001 + x (three nodes a step, each step on top of the
  last, so the graph really is 100,000 levels deep: checked by its longest path), and a
  100,000-node polynomial chain t ← 0.9999·t + x³ whose third derivative has a closed form.
- Wide: 10,000-operand sums and products, and a sum over 10,000 vars.

Every walk — eval, gen_graph, diff (every method), grad, derive, lambdify, to_dot, parse,
from_sympy — runs under a recursion limit only ~120 frames above the caller's stack
(``shallow_stack``), so a recursive walk of these graphs fails at once: the walks are
iterative. The oracles are independent: a float64 recurrence written out here for the chains,
closed forms (NumPy sums) for the wide ones.

Timings are measured, never asserted: ``test_measured_growth`` prints the time at sizes N and 2N
(run with ``-s`` to see them) for the docs to quote.
"""

from __future__ import annotations

import contextlib
import resource
import sys
import time
import warnings
from typing import Any, Callable, Iterator

import numpy as np
import pytest
import sympy

import subgraph_ad as sad
from subgraph_ad.compile.lambdify import BackendWarning

CHAIN_STEPS = 33_334  # three nodes a step: 100,002 nodes plus x and the constant
POLY_STEPS = 50_000  # two nodes a step
WIDE = 10_000
C = 1.0001
X0 = 0.3


@contextlib.contextmanager
def shallow_stack(headroom: int = 120) -> Iterator[int]:
    """Run the block with at most ``headroom`` Python frames above this one (pytest's own stack
    is ~50-80 frames, so the limit is ~200): a walk that recursed per node would need 100,000."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + headroom)
    try:
        yield depth + headroom
    finally:
        sys.setrecursionlimit(old)


def longest_path(tape: sad.Tape, root: int) -> int:
    """Number of nodes on the longest path from a leaf to ``root`` (an iterative pass over the
    tape, in index order, which is a topological order)."""
    level = [0] * (root + 1)
    for i in range(root + 1):
        args = tape.nodes[i].args
        level[i] = 1 + max((level[a] for a in args), default=0)
    return level[root]


def close(ours: Any, ref: Any, rtol: float = 1e-9) -> bool:
    """Agreement to 1e-9 of the scale: both sides are float64 computations of the same
    contracting recurrence (or sums of positive terms), whose rounding errors stay ~1e-13."""
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    return bool(np.all(np.abs(ours - ref) <= rtol * np.maximum(1.0, np.abs(ref))))


# -- the oracles ---------------------------------------------------------------------------------------
def chain_reference(x: Any, steps: int = CHAIN_STEPS) -> tuple[Any, Any]:
    """The sin chain and its derivative by forward recurrence (dual numbers), in NumPy."""
    v, d = np.asarray(x, dtype=float), np.ones_like(np.asarray(x, dtype=float))
    for _ in range(steps):
        v, d = np.sin(v) * C + x, np.cos(v) * C * d + 1.0
    return v, d


def poly_closed_form(x: float, steps: int = POLY_STEPS, c: float = 0.9999) -> tuple[float, float, float]:
    """t_n = A·x³ + cⁿ·x with A = (1 − cⁿ)/(1 − c): value, first and third derivative."""
    a, b = (1 - c**steps) / (1 - c), c**steps
    return a * x**3 + b * x, 3 * a * x**2 + b, 6 * a


# -- the graphs, built once per module -------------------------------------------------------------------
@pytest.fixture(scope="module")
def chain() -> tuple[sad.Term, sad.Term]:
    tape = sad.Tape()
    x = tape.var("x", X0)
    t = x
    with shallow_stack():
        for _ in range(CHAIN_STEPS):
            t = sad.sin(t) * C + x
    return t, x


@pytest.fixture(scope="module")
def wide() -> dict[str, Any]:
    tape = sad.Tape()
    x = tape.var("x", X0)
    a = 1.0 + np.arange(1, WIDE + 1) / WIDE
    b = 1.0 / (np.arange(1, WIDE + 1) + 1.0) ** 2
    with shallow_stack():
        s = sad.sin(float(a[0]) * x)
        for k in range(1, WIDE):
            s = s + sad.sin(float(a[k]) * x)
        p = 1 + float(b[0]) * x
        for k in range(1, WIDE):
            p = p * (1 + float(b[k]) * x)
    return {"tape": tape, "x": x, "a": a, "b": b, "sum": s, "product": p}


def product_derivatives(b: np.ndarray, x: float) -> tuple[float, float, float]:
    """P = Π(1 + b_k x): P, P′ and P‴ from the cumulants of log P (r_k = b_k/(1 + b_k x):
    L′ = Σr, L″ = −Σr², L‴ = 2Σr³; P′ = P·L′, P‴ = P·(L‴ + 3L′L″ + L′³))."""
    r = b / (1 + b * x)
    value = float(np.prod(1 + b * x))
    l1, l2, l3 = r.sum(), -(r**2).sum(), 2 * (r**3).sum()
    return value, value * l1, value * (l3 + 3 * l1 * l2 + l1**3)


# -- deep ------------------------------------------------------------------------------------------------
def test_the_chain_is_really_100k_nodes_deep(chain: tuple[sad.Term, sad.Term]) -> None:
    """Nothing folded or interned away: 100,000 nodes, each step on top of the last."""
    t, x = chain
    assert len(t.tape) >= 100_000
    assert longest_path(t.tape, t.index) >= 100_000


def test_deep_chain_eval_gen_graph_grad_derive(chain: tuple[sad.Term, sad.Term]) -> None:
    t, x = chain
    value, slope = chain_reference(X0)
    with shallow_stack():
        assert close(t.eval(), value)
        d = t.gen_graph(x)
        assert close(d.eval(), slope)
        assert close(t.grad()[x], slope)
        assert close(t.derive(x), slope)
        points = np.array([-0.7, 0.1, X0, 1.3])
        assert close(t.eval({x: points}), chain_reference(points)[0])


def test_deep_chain_lambdify(chain: tuple[sad.Term, sad.Term]) -> None:
    """Compiled code for 100,000 nodes, on one point and on an array (the Numba backend, which
    falls back to NumPy above NUMBA_MAX_STEPS, is run on the wide sum below)."""
    t, x = chain
    points = np.array([-0.7, 0.1, X0, 1.3])
    want = chain_reference(points)[0]
    with shallow_stack():
        f = sad.lambdify([x], t)
        assert close(f(X0), want[2])
        assert close(f(points), want)


def test_deep_chain_to_dot_has_every_node(chain: tuple[sad.Term, sad.Term]) -> None:
    """DOT text needs no layout, so any size is drawn as text (only layout is capped)."""
    t, x = chain
    with shallow_stack():
        dot = t.to_dot()
    lines = dot.splitlines()
    nodes = sum(1 for line in lines if line.startswith("  n") and "->" not in line)
    edges = sum(1 for line in lines if "->" in line)
    assert nodes >= 100_000 - 1  # every node but possibly folded-in constants
    assert edges >= 2 * CHAIN_STEPS
    assert lines[0].startswith("digraph") and lines[-1] == "}"


def test_polynomial_chain_diff3_every_method() -> None:
    """d³/dx³ of a 100,000-node chain whose derivatives stay linear in size, by every method of
    ``diff``, against the closed form 6·(1 − cⁿ)/(1 − c). One tape for all methods: "graph" and
    "auto" may reuse memoised gen_graph passes, Taylor mode never does. The "graph" run leaves
    500,000 nodes on the tape: the largest graph of this file."""
    tape = sad.Tape()
    x = tape.var("x", 0.7)
    value, slope, third = poly_closed_form(0.7)
    with shallow_stack():
        cube = x**3
        t = x
        for _ in range(POLY_STEPS):
            t = 0.9999 * t + cube
        assert len(tape) >= 100_000 and longest_path(tape, t.index) >= 100_000
        assert close(t.eval(), value)
        assert close(t.gen_graph(x).eval(), slope)
        for method in ("taylor", "graph", "auto"):
            d3 = t.diff(x, 3, method=method)
            assert close(d3.eval(), third), method


def test_deep_from_sympy_and_to_sympy() -> None:
    """from_sympy of a 100,000-node SymPy chain, and to_sympy of a 3,000-node one (deeper than
    Python's default recursion limit; SymPy itself costs ~1 ms a node there, so not 100,000)."""
    X = sympy.Symbol("x")
    c = sympy.Float(C)
    expr = X
    for _ in range(CHAIN_STEPS):  # unevaluated: SymPy's own simplification would cost minutes
        expr = sympy.Add(sympy.Mul(c, sympy.sin(expr, evaluate=False), evaluate=False), X, evaluate=False)
    tape = sad.Tape()
    with shallow_stack():
        t = tape.from_sympy(expr)
        assert len(tape) >= 100_000
        assert close(t.eval({"x": X0}), chain_reference(X0)[0])

    steps = 1_000
    small = sad.Tape()
    x = small.var("x", X0)
    u = x
    for _ in range(steps):
        u = sad.sin(u) * C + x
    back = u.to_sympy()
    assert close(sympy_value(back, {"x": X0}), chain_reference(X0, steps)[0])


def sympy_value(expr: sympy.Basic, point: dict[str, float]) -> float:
    """Evaluate Add, Mul, sin, numbers and symbols of a SymPy tree with an explicit stack (SymPy's
    own evalf recurses once per level and cannot evaluate a 3,000-deep expression)."""
    ops: dict[type, Callable[..., float]] = {sympy.Add: lambda *a: sum(a), sympy.Mul: lambda *a: float(np.prod(a)),
                                            sympy.sin: np.sin}
    done: dict[int, float] = {}
    stack: list[tuple[sympy.Basic, bool]] = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in done:
            continue
        if node.is_Symbol:
            done[id(node)] = point[node.name]
        elif node.is_Number:
            done[id(node)] = float(node)
        elif ready:
            done[id(node)] = float(ops[node.func](*(done[id(a)] for a in node.args)))
        else:
            stack.append((node, True))
            stack.extend((a, False) for a in node.args)
    return done[id(expr)]


def test_parse_nesting_at_the_documented_limit() -> None:
    """``sin(sin(…(x)…))`` nested to the parser's documented MAX_DEPTH parses and is right."""
    from subgraph_ad.interop import parse as module

    depth = module.MAX_DEPTH
    text = "sin(" * depth + "x" + ")" * depth
    assert len(text) <= module.MAX_LENGTH
    with shallow_stack():
        t = sad.parse(text)
        value = t.eval({"x": X0})
    ref = X0
    for _ in range(depth):
        ref = np.sin(ref)
    assert close(value, ref)
    assert longest_path(t.tape, t.index) == depth + 1


# -- wide ------------------------------------------------------------------------------------------------
def test_wide_sum_values_derivatives_and_compiled_code(wide: dict[str, Any]) -> None:
    """S = Σ sin(a_k x) over 10,000 operands: S′ = Σ a_k cos(a_k x), S‴ = −Σ a_k³ cos(a_k x)."""
    s, x, a = wide["sum"], wide["x"], wide["a"]
    ref = np.sum(np.sin(a * X0)), np.sum(a * np.cos(a * X0)), -np.sum(a**3 * np.cos(a * X0))
    with shallow_stack():
        assert close(s.eval(), ref[0])
        ds = s.gen_graph(x)
        assert close(ds.eval(), ref[1])
        assert close(s.grad()[x], ref[1])
        assert close(s.derive(x), ref[1])
        for method in ("graph", "auto"):  # auto: Taylor mode, a closed form not tried (MAX_ATOMS)
            assert close(s.diff(x, 3, method=method).eval(), ref[2])
        f = sad.lambdify([x], [s, ds])
        assert close(f(X0), ref[:2])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BackendWarning)
            g = sad.lambdify([x], s, backend="numba")
        assert close(g(np.array([X0, X0])), [ref[0], ref[0]])
        dot = s.to_dot()
    assert dot.count("->") >= 3 * WIDE - 1


def test_wide_product_values_and_derivatives(wide: dict[str, Any]) -> None:
    """P = Π(1 + b_k x) over 10,000 factors against its closed-form derivatives."""
    p, x, b = wide["product"], wide["x"], wide["b"]
    value, slope, third = product_derivatives(b, X0)
    with shallow_stack():
        assert close(p.eval(), value)
        assert close(p.gen_graph(x).eval(), slope)
        assert close(p.grad()[x], slope)
        assert close(p.derive(x), slope)
        assert close(p.diff(x, 3, method="taylor").eval(), third, 1e-8)
        assert close(p.diff(x, 3, method="graph").eval(), third, 1e-8)
        f = sad.lambdify([x], p)
        assert close(f(X0), value)


def linear_sum() -> tuple[sad.Term, list[sad.Term]]:
    """L = Σ (k+1)·x_k over 10,000 vars, with x_k = k / 10,000."""
    tape = sad.Tape()
    xs = [tape.var(f"x{k}", k / WIDE) for k in range(WIDE)]
    total = 1 * xs[0]
    for k in range(1, WIDE):
        total = total + (k + 1) * xs[k]
    return total, xs


def test_sum_over_10k_vars_grad_parse_from_sympy() -> None:
    """grad gives every coefficient; the same sum read from text (within the parser's documented
    MAX_LENGTH) and from SymPy evaluates to the closed form Σ (k+1)·k/N."""
    from subgraph_ad.interop import parse as module

    exact = sum((k + 1) * k for k in range(WIDE)) / WIDE
    with shallow_stack():
        total, xs = linear_sum()
        assert close(total.eval(), exact)
        g = total.grad()
        assert [g[v] for v in xs[:3]] + [g[xs[-1]]] == [1.0, 2.0, 3.0, float(WIDE)]
        assert all(g[v] == k + 1 for k, v in enumerate(xs))

    text = "+".join(f"{k + 1}*x{k}" for k in range(WIDE))
    assert len(text) <= module.MAX_LENGTH, "the parser's documented limit must admit a 10,000-operand sum"
    values = {f"x{k}": k / WIDE for k in range(WIDE)}
    with shallow_stack():
        parsed = sad.parse(text)
        assert len(parsed.tape.vars) == WIDE
        assert close(parsed.eval(values), exact)
        gp = parsed.grad(values)
        assert gp["x9999"] == float(WIDE) and gp["x0"] == 1.0

    symbols = sympy.symbols(f"x0:{WIDE}")
    expr = sympy.Add(*[(k + 1) * s for k, s in enumerate(symbols)])
    tape = sad.Tape()
    with shallow_stack():
        built = tape.from_sympy(expr)
        assert close(built.eval(values), exact)


def test_to_sympy_of_a_10k_operand_sum_does_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """to_sympy of a 10,000-operand sum gives the flat SymPy sum, and SymPy is not made to
    re-flatten the growing sum at every operand: the operands all of SymPy's Add/Mul
    constructors receive are counted (a deterministic measure of work, not a timing). Building
    the sum one operand at a time passes k operands to the k-th Add, ~N²/2 = 5·10⁷ in all
    (minutes); at most 10·N is allowed (one Add of N operands and N products of two need 3·N),
    and the test stops as soon as that is exceeded."""
    total, xs = linear_sum()
    budget = 10 * WIDE
    seen = [0]
    for cls in (sympy.Add, sympy.Mul):
        original = cls.flatten.__func__

        def counting(klass: type, seq: list, original: Callable = original) -> Any:
            seen[0] += len(seq)
            if seen[0] > budget:
                raise AssertionError(f"to_sympy passed more than {budget} operands to SymPy's Add/Mul for a "
                                     f"{WIDE}-operand sum: quadratic work")
            return original(klass, seq)

        monkeypatch.setattr(cls, "flatten", classmethod(counting))
    expr = total.to_sympy()
    monkeypatch.undo()
    symbols = sympy.symbols(f"x0:{WIDE}")
    assert expr == sympy.Add(*[(k + 1) * s for k, s in enumerate(symbols)])


# -- growth: measured, printed, never asserted ---------------------------------------------------------------
def _best(run: Callable[[], Any], repeats: int = 2) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def test_measured_growth(capsys: pytest.CaptureFixture[str]) -> None:
    """Time at N and 2N (best of two where cheap) for the walks above; the ratio is ~2 for linear
    work. The numbers go to stdout (``pytest -s``) for docs/ to quote; nothing here can fail on
    speed."""
    rows = []

    def chain_of(steps: int) -> tuple[sad.Term, sad.Term]:
        tape = sad.Tape()
        x = tape.var("x", X0)
        t = x
        for _ in range(steps):
            t = sad.sin(t) * C + x
        return t, x

    def sum_of(n: int) -> tuple[sad.Term, sad.Term]:
        tape = sad.Tape()
        x = tape.var("x", X0)
        s = sad.sin(1.0001 * x)
        for k in range(1, n):
            s = s + sad.sin((1 + k / n) * x)
        return s, x

    # (label, N, make(n) -> the timed callable, repeats: best of two where a run is cheap)
    cases: list[tuple[str, int, Callable[[int], Callable[[], Any]], int]] = [
        ("build sin chain (steps)", 4_000, lambda n: lambda: chain_of(n), 2),
        ("eval sin chain", 4_000, lambda n: (lambda t: lambda: t[0].eval())(chain_of(n)), 2),
        ("build + gen_graph sin chain", 4_000, lambda n: lambda: (lambda t: t[0].gen_graph(t[1]))(chain_of(n)), 2),
        ("grad sin chain", 4_000, lambda n: (lambda t: lambda: t[0].grad())(chain_of(n)), 2),
        ("to_dot sin chain", 4_000, lambda n: (lambda t: lambda: t[0].to_dot())(chain_of(n)), 2),
        ("lambdify sin chain", 2_000, lambda n: (lambda t: lambda: sad.lambdify([t[1]], t[0]))(chain_of(n)), 2),
        ("lambdify [S, dS], sum of sin", 2_000,
         lambda n: (lambda t: lambda: sad.lambdify([t[1]], [t[0], t[0].gen_graph(t[1])]))(sum_of(n)), 1),
        ("parse sum text (operands)", 5_000, lambda n: (lambda s: lambda: sad.parse(s))(
            "+".join(f"{k + 1}*x{k}" for k in range(n))), 2),
        ("build + diff(x, 3) auto, sum of sin", 250, lambda n: lambda: (lambda t: t[0].diff(t[1], 3))(sum_of(n)), 1),
        ("to_sympy sum of sin", 1_000, lambda n: (lambda t: lambda: t[0].to_sympy())(sum_of(n)), 1),
    ]
    for label, n, make, repeats in cases:
        small, large = _best(make(n), repeats), _best(make(2 * n), repeats)
        rows.append((label, n, small, large))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with capsys.disabled():
        print("\nmeasured growth: operation, N, t(N), t(2N), t(2N)/t(N)")
        for label, n, small, large in rows:
            print(f"  {label:36s} N={n:6d}  {small:8.3f} s  {large:8.3f} s  ratio {large / small:5.2f}")
        print(f"  peak RSS of this process so far: {peak_mb:.0f} MB")
    assert all(small > 0 and large > 0 for _, _, small, large in rows)
