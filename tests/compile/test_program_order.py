"""A compiled program computes its nodes in tape order, or output by output where that keeps
fewer values live at once (``compile/program.py``: ``build_program``). The order must never
change a value: random many-output programs (every built-in, a − a, f(a, a), conditions, zero
tangents) laid out both ways equal the graph's own values (``Term.eval``) on both backends; the
Rosenbrock HVP, whose reverse sweep holds every partial result in tape order, is laid out
output by output and equals JAX's HVP of the array code."""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.benchmark_functions import SAD, rosenbrock
from subgraph_ad.compile import program as program_module
from subgraph_ad.compile.program import build_program, chunks
from random_programs import BINARY, UNARY, grown

SEEDS = range(16)


def _ascending(program) -> bool:
    dests = [dest for dest, *_ in program.steps]
    return dests == sorted(dests)


def random_outputs(seed: int):
    """Scalar vars x, y, z and a random function of them, with its gradient and a directional
    derivative as the outputs (many outputs that share a sweep)."""
    rng = np.random.default_rng(seed)
    tape = sad.Tape()
    xs = [tape.var(name, 0.1 + 0.2 * k) for k, name in enumerate("xyz")]
    pool = grown(list(xs) + [xs[0] * 0.0], (UNARY + BINARY)[seed::len(SEEDS)], rng)  # [.., a zero tangent, ..]
    z = sum(pool[-4:], pool[3])
    gradient = list(z.grad_graph(xs))
    directional = z.gen_graph(xs[1])
    return tape, xs, [z, *gradient, directional, gradient[0] * gradient[1]]


def test_the_seeds_apply_every_built_in():
    assert {n for s in SEEDS for n in (UNARY + BINARY)[s::len(SEEDS)]} == set(UNARY + BINARY)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("demand", [False, True])
@pytest.mark.filterwarnings("error::subgraph_ad.compile.lambdify.BackendWarning")  # every built-in compiles
def test_either_order_gives_the_graphs_values(seed, demand, monkeypatch):
    tape, xs, outputs = random_outputs(seed)
    # the order forced: output by output when ``demand`` (the walk's order is not ascending),
    # else tape order (ascending)
    monkeypatch.setattr(program_module, "most_live", lambda reads, order: int((list(order) == sorted(order)) == demand))
    program = build_program(tape, xs, outputs)
    assert _ascending(program) or demand
    rng = np.random.default_rng(100 + seed)
    points = [rng.uniform(-0.9, 0.9, 9) for _ in xs]
    for backend in ("numpy", "numba"):
        compiled = sad.lambdify(xs, outputs, backend=backend, cache=False)
        found = compiled(*points)
        for k in range(9):
            values = {v: float(p[k]) for v, p in zip(xs, points)}
            for got, term in zip(found, outputs):
                want = term.eval(values)
                assert got[k] == pytest.approx(want, rel=1e-12, abs=1e-12, nan_ok=True), (seed, backend, term)


def test_a_reverse_sweep_is_laid_out_output_by_output_and_equals_jax():
    """R100's Hessian-vector product: in tape order its reverse sweep keeps ~300 values live
    across the chunks (scratch columns); output by output, about one per output."""
    jax = pytest.importorskip("jax")  # jax is in the dev extra: always present in make test
    jax.config.update("jax_enable_x64", True)
    n = 100
    tape = sad.Tape()
    xs = [tape.var(f"x{i}") for i in range(n)]
    vs = [tape.var(f"v{i}") for i in range(n)]
    terms = sad.hvp(rosenbrock(xs, SAD), xs, vs)
    program = build_program(tape, xs + vs, terms)
    assert not _ascending(program) and chunks(program).columns <= 110
    tape_order = program_module._laid_out(tape, xs + vs, terms, program_module.dependencies(
        tape, [t.index for t in terms]), {})
    assert chunks(tape_order).columns > 300  # what output by output saves
    rng = np.random.default_rng(7)
    X, V = rng.uniform(-1, 1, (9, n)), rng.normal(size=(9, n))

    def f(x):
        return jax.numpy.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    want = np.asarray(jax.vmap(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])(X, V))
    for backend in ("numpy", "numba"):
        found = np.array(sad.lambdify(xs + vs, terms, backend=backend, cache=False)(*X.T, *V.T)).T
        np.testing.assert_allclose(found, want, rtol=1e-12, atol=1e-9)


def test_one_output_of_shared_subexpressions_keeps_tape_order():
    """F5's 20th derivative keeps fewer values live in tape order (30 against 37 output by
    output): it stays so, and its values are the graph's."""
    from subgraph_ad.benchmark_functions import f5

    tape, f, x = f5()
    d = f.diff(x, 20)
    others = [v for v in tape.vars.values() if v != x]
    program = build_program(tape, [x, *others], [d])
    assert _ascending(program)
    points = np.linspace(1.2, 3.0, 9)  # w1 > 1: log w1 > 0 under the root
    found = sad.lambdify([x, *others], d, backend="numba", cache=False)(points, *[v.value for v in others])
    for k, p in enumerate(points):
        assert np.isfinite(found[k]) and found[k] == pytest.approx(d.eval({x: float(p)}), rel=1e-12)
