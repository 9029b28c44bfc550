"""Every batched entry point on a Dask cluster of two worker processes: lazy Dask arrays in and
out, chunked along the batch axis, with NumPy's values (and closed forms'); the program one key
of the graph; a worker compiles once, none after warm-up; faults (a killed worker, a worker
without Numba, a program too big to ship)."""

from __future__ import annotations

import os
import signal
import sys

import dask
import dask.array as da
import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile import cluster

distributed = pytest.importorskip("distributed")

A = np.array([0.3, -0.5, 0.2])  # u(x) = exp(a·x): Δu = |a|²u, Δ²u = |a|⁴u, ∂ᵢ∂ⱼu = aᵢaⱼu


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  worker_dashboard_address=None) as local, distributed.Client(local) as c:
        yield c


@pytest.fixture
def small_chunks():
    """A few chunks per array, so that chunks land on both workers."""
    with dask.config.set({"subgraph_ad.chunk-points": 64}):
        yield


def _points(n=256, d=3, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=(n, d))


def _program_keys(collection):
    return [k for k in dict(collection.__dask_graph__()) if str(k).startswith(cluster.PREFIX)]


def _shipped_objects(collection):
    """Every Shipped the graph holds, by identity, wherever it sits (a task's argument too)."""
    found = {}
    for value in dict(collection.__dask_graph__()).values():
        todo = [value]
        while todo:
            item = todo.pop()
            item = getattr(item, "value", item)
            if isinstance(item, cluster.Shipped):
                found[id(item)] = item
            elif isinstance(item, (tuple, list)):
                todo.extend(item)
            elif hasattr(item, "args"):  # a task of the graph: its function's arguments
                todo.extend(getattr(item, "args", ()))
    return found



def same_program(got, numpy, name):
    """A Dask batch runs the scalar program a cluster ships; on NumPy an array-written function
    runs its array program, the same sums in another order: equal to the last bits of the dtype
    (4 ulp of the largest value: sums cancel), and bit for bit where both run one program
    (lambdify'd functions, scalar code)."""
    tolerance = 4 * np.finfo(np.asarray(numpy).dtype).eps
    scale = float(np.max(np.abs(numpy))) if np.size(numpy) else 0.0
    np.testing.assert_allclose(got, numpy, rtol=tolerance, atol=tolerance * scale, err_msg=name)

def test_lambdify_on_dask_equals_numpy_with_one_program_key(client, small_chunks):
    tape = sad.Tape()
    x, y = tape.var("x"), tape.var("y")
    f = sad.lambdify([x, y], [sad.sin(x) * y, sad.exp(x)])
    xs = np.linspace(-2.0, 2.0, 1000)
    value, other = f(da.from_array(xs, chunks=500), 3.0)
    assert isinstance(value, da.Array) and value.chunks == ((64,) * 15 + (40,),)
    assert len(_program_keys(value)) == 1 and len(_shipped_objects(value)) == 1
    got, got_exp = client.compute([value, other], sync=True)
    np.testing.assert_allclose(got, np.sin(xs) * 3.0, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(got_exp, np.exp(xs), rtol=1e-15)
    assert np.array_equal(got, f(xs, 3.0)[0])


def test_traced_transforms_on_dask_equal_closed_forms_and_numpy(client, small_chunks):
    def f(x):
        return np.sum(x ** 3) * sad.sin(x[0])

    X, V = _points(), _points(seed=1)
    Xd, Vd = da.from_array(X, chunks=100), da.from_array(V, chunks=100)
    s, c, cube = np.sin(X[:, 0]), np.cos(X[:, 0]), np.sum(X ** 3, axis=1)
    grad = 3 * X ** 2 * s[:, None]
    grad[:, 0] += cube * c
    hess = np.einsum("ni,ij->nij", 6 * X * s[:, None], np.eye(3))
    hess[:, 0, :] += 3 * X ** 2 * c[:, None]
    hess[:, :, 0] += 3 * X ** 2 * c[:, None]
    hess[:, 0, 0] -= cube * s
    cases = {
        "grad": (sad.vmap(sad.grad(f)), (Xd,), (X,), grad),
        "value_and_grad": (sad.vmap(sad.value_and_grad(f)), (Xd,), (X,), (cube * s, grad)),
        "jacobian": (sad.vmap(sad.jacobian(lambda x: x ** 2 * x[0])), (Xd,), (X,),
                     np.einsum("ni,ij->nij", 2 * X * X[:, :1], np.eye(3)) + np.pad(X[:, :, None] ** 2, ((0, 0), (0, 0), (0, 2)))),
        "hessian": (sad.vmap(sad.hessian(f)), (Xd,), (X,), hess),
        "hvp": (sad.vmap(lambda x, v: sad.hvp(f, x, v)), (Xd, Vd), (X, V), np.einsum("nij,nj->ni", hess, V)),
        "vmap": (sad.vmap(lambda x: np.tanh(x) * 2.0), (Xd,), (X,), np.tanh(X) * 2.0),
    }
    lazy = {name: fn(*args) for name, (fn, args, _, _) in cases.items()}
    computed = client.compute(lazy, sync=True)
    for name, (fn, _, plain, closed) in cases.items():
        results = lazy[name] if isinstance(lazy[name], tuple) else (lazy[name],)
        assert all(isinstance(r, da.Array) and len(r.chunks[0]) == 4 for r in results), name
        got = computed[name] if isinstance(computed[name], tuple) else (computed[name],)
        expected = closed if isinstance(closed, tuple) else (closed,)
        numpy = fn(*plain)
        for g, e, n in zip(got, expected, numpy if isinstance(numpy, tuple) else (numpy,)):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, err_msg=name)
            same_program(g, n, name)


def test_operators_on_dask_points_equal_closed_forms(client, small_chunks):
    def u(x):
        return np.exp(np.dot(A, x))

    P = _points(n=200).reshape(10, 20, 3)  # points of any leading shape
    Pd = da.from_array(P, chunks=(5, 20, 3))
    value = np.exp(P @ A)
    lazy = [sad.laplacian(u)(Pd), sad.biharmonic(u)(Pd), sad.derivative_tensor(u, 2)(Pd)]
    assert all(isinstance(r, da.Array) for r in lazy)
    lap, bih, tensor = client.compute(lazy, sync=True)
    np.testing.assert_allclose(lap, A @ A * value, rtol=1e-13)
    np.testing.assert_allclose(bih, (A @ A) ** 2 * value, rtol=1e-13)
    np.testing.assert_allclose(tensor, np.multiply.outer(value, np.outer(A, A)), rtol=1e-13)
    same_program(lap, sad.laplacian(u)(P), "laplacian")


def test_derivative_of_points_on_dask(client, small_chunks):
    d4 = sad.derivative(lambda x: np.sin(x) * 2.0, 4)
    xs = np.linspace(-3.0, 3.0, 500)
    lazy = d4(da.from_array(xs, chunks=250))
    assert isinstance(lazy, da.Array) and len(_program_keys(lazy)) == 1
    np.testing.assert_allclose(client.compute(lazy, sync=True), 2.0 * np.sin(xs), rtol=1e-12, atol=1e-14)


def test_chunks_default_to_a_short_tasks_work_and_are_overridable():
    tape = sad.Tape()
    x = tape.var("x")
    short = sad.lambdify([x], sad.sin(x))
    longer = sad.lambdify([x], sad.diff(sad.tanh(sad.tanh(x)), x, 8))
    assert 10**6 <= cluster.chunk_points(short) <= cluster.MAX_POINTS
    assert cluster.chunk_points(longer) < cluster.chunk_points(short)  # more steps a point: fewer points
    assert cluster.chunk_rows(short, 3 * 10**7, workers=0) == cluster.chunk_points(short)  # no workers known
    with dask.config.set({"subgraph_ad.chunk-points": 1000}):
        assert short(da.zeros(2500, chunks=2500)).chunks == ((1000, 1000, 500),)
    with dask.config.set({"subgraph_ad.chunk-points": 0}), pytest.raises(ValueError, match="chunk-points"):
        short(da.zeros(10))


def test_a_1e5_step_program_ships_under_1_mb():
    tape = sad.Tape()
    x = tape.var("x")
    y = x
    for k in range(33_334):  # three steps each
        y = sad.sin(y) * (1.0 + k * 1e-9) + x
    f = sad.lambdify([x], y)
    assert len(f.program.steps) >= 10**5
    assert sad.dask.program_size(f) < 10**6


def test_a_program_too_big_to_ship_says_its_size_and_the_limit():
    tape = sad.Tape()
    x = tape.var("x")
    f = sad.lambdify([x], sad.diff(sad.sin(x) * sad.exp(x), x, 6))
    size = sad.dask.program_size(f)
    with dask.config.set({"subgraph_ad.ship-limit": size - 1}):
        g = sad.lambdify([x], sad.diff(sad.sin(x) * sad.exp(x), x, 6))
        with pytest.raises(ValueError, match=f"is {size:,} bytes compressed, over the {size - 1:,}-byte limit"):
            g(da.zeros(10))


def _fresh_program(constant):
    """A lambdify'd function no worker has seen (its constant makes its hash new)."""
    tape = sad.Tape()
    x = tape.var("x")
    return sad.lambdify([x], sad.cos(x) * constant + x)


def test_a_worker_compiles_once_and_not_at_all_after_warm_up(client, small_chunks):
    xs = np.linspace(0.0, 1.0, 2000)  # 32 chunks: many tasks on each worker
    cold = _fresh_program(0.125)
    before = client.run(sad.dask.compiles)
    assert np.allclose(client.compute(cold(da.from_array(xs)), sync=True), np.cos(xs) * 0.125 + xs)
    grown = {w: n - before[w] for w, n in client.run(sad.dask.compiles).items()}
    assert all(n <= 1 for n in grown.values()) and sum(grown.values()) >= 1, grown  # once per process, not per task

    warm = _fresh_program(0.25)
    answers = sad.dask.warm(client, warm)
    assert len(answers) == 2
    after_warm = client.run(sad.dask.compiles)
    assert all(after_warm[w] == grown[w] + before[w] + 1 for w in after_warm)  # each worker built it once
    got = client.compute(warm(da.from_array(xs)), sync=True)
    assert np.allclose(got, np.cos(xs) * 0.25 + xs)
    assert client.run(sad.dask.compiles) == after_warm  # zero compiles in 32 tasks


def test_warm_takes_the_lazy_result_of_a_traced_transform(client, small_chunks):
    fn = sad.vmap(sad.grad(lambda x: np.sum(np.sinh(x) * 0.375)))
    lazy = fn(da.from_array(_points()))
    sad.dask.warm(client, lazy)
    before = client.run(sad.dask.compiles)
    np.testing.assert_allclose(client.compute(lazy, sync=True), np.cosh(_points()) * 0.375, rtol=1e-14)
    assert client.run(sad.dask.compiles) == before


def _hide_numba():
    sys.modules["numba"] = None
    return "hidden"


def _show_numba():
    if sys.modules.get("numba", 1) is None:
        del sys.modules["numba"]


def test_a_worker_without_numba_falls_back_with_the_same_values(client, small_chunks):
    worker = sorted(client.scheduler_info()["workers"])[0]
    tape = sad.Tape()
    x = tape.var("x")
    f = sad.lambdify([x], sad.atan(x) * 0.625, backend="numba")
    xs = np.linspace(-1.0, 1.0, 300)
    client.run(_hide_numba, workers=[worker])
    try:
        got = client.compute(f(da.from_array(xs)), workers=[worker], sync=True)
    finally:
        client.run(_show_numba, workers=[worker])
    np.testing.assert_allclose(got, np.arctan(xs) * 0.625, rtol=1e-15)
    events = [event for _, event in client.get_events("subgraph_ad")]
    assert {"asked": "numba", "running": "numpy"}.items() <= events[-1].items()


def test_a_killed_worker_does_not_change_the_result(client, small_chunks):
    fn = sad.vmap(sad.hessian(lambda x: np.sum(np.cos(x) * x[0])))
    X = _points(n=640)
    lazy = client.persist(fn(da.from_array(X)))
    distributed.wait(lazy)
    holders = {w for ws in client.who_has(lazy).values() for w in ws}
    assert len(holders) == 2  # both hold chunks: killing one loses some
    victim = sorted(holders)[0]
    pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)
    got = client.compute(lazy, sync=True)  # the lost chunks are computed again
    assert np.array_equal(got, fn(X))
    client.wait_for_workers(2, timeout=60)


def test_a_float32_dask_batch_gives_the_dtype_and_values_numpy_gives(client, small_chunks):
    def u(x):
        return np.exp(np.sum(x * x) * 0.5)

    P = _points(n=120).astype(np.float32)
    P64 = _points(n=120, seed=1)
    tape = sad.Tape()
    x = tape.var("x")
    cases = {
        "grad": (sad.vmap(sad.grad(u)), (P,)),
        "value_and_grad": (sad.vmap(sad.value_and_grad(u)), (P,)),
        "hessian": (sad.vmap(sad.hessian(u)), (P,)),
        "vmap": (sad.vmap(lambda x: np.tanh(x) * 2.0), (P,)),
        "hvp, float64 v": (sad.vmap(lambda x, v: sad.hvp(u, x, v)), (P, P64)),
        "laplacian": (sad.laplacian(u), (P,)),
        "derivative_tensor": (sad.derivative_tensor(u, 2), (P,)),
        "derivative": (sad.derivative(np.sin, 2), (P[:, 0],)),
        "lambdify": (sad.lambdify([x], sad.sin(x)), (P[:, 0],)),
    }
    lazy = {name: fn(*(da.from_array(a, chunks=(50,) + a.shape[1:]) for a in args))
            for name, (fn, args) in cases.items()}
    computed = client.compute(lazy, sync=True)
    for name, (fn, args) in cases.items():
        numpy = fn(*args)
        numpy, got, declared = ((r if isinstance(r, tuple) else (r,)) for r in (numpy, computed[name], lazy[name]))
        for n, g, d in zip(numpy, got, declared):
            assert d.dtype == g.dtype == n.dtype, (name, d.dtype, g.dtype, n.dtype)
            same_program(g, n, name)
    assert computed["grad"].dtype == np.float32  # float32 kept, as on NumPy
    np.testing.assert_allclose(computed["grad"], P * np.exp(np.sum(P.astype(float) ** 2, axis=1) / 2)[:, None],
                               rtol=1e-6)


def test_the_stochastic_laplacian_runs_lazily_per_chunk_with_numpys_estimate(client, small_chunks):
    def u(x):  # not separable: the estimate differs from Δu, so equal estimates mean equal probes
        return np.exp(np.dot(A, x)) * sad.sin(x[0] * x[1])

    P = _points(n=200).reshape(10, 20, 3)
    Pd = da.from_array(P, chunks=(5, 20, 3))
    for seed in (0, 7):
        estimate = sad.laplacian(u, samples=4, seed=seed)
        lazy = estimate(Pd)
        assert isinstance(lazy, da.Array) and lazy.shape == (10, 20) and lazy.dtype == np.float64
        assert len(_program_keys(lazy)) == 1
        assert lazy.npartitions >= 3  # 200 points × 4 probes in chunks of 64 evaluations
        got = client.compute(lazy, sync=True)
        assert np.array_equal(got, estimate(P))  # the same probes, the same sums
    exact = sad.laplacian(u)(P)
    assert not np.allclose(got, exact, rtol=1e-3)  # an estimate, not the exact operator
    separable = sad.laplacian(lambda x: np.sum(np.sin(x) * x ** 2), samples=3)  # zero variance: exact
    np.testing.assert_allclose(client.compute(separable(Pd), sync=True),
                               np.sum((2 - P ** 2) * np.sin(P) + 4 * P * np.cos(P), axis=-1), rtol=1e-13, atol=1e-13)


def test_chunks_give_each_known_worker_two_where_the_batch_has_the_work():
    tape = sad.Tape()
    x = tape.var("x")
    short = sad.lambdify([x], sad.sin(x))
    most = cluster.chunk_points(short)
    least = cluster.MIN_TASK_SECONDS / (cluster.STEP_SECONDS * len(short.program.steps))  # 1 ms of work

    def count(rows, workers, per_row=1):
        return -(-rows // cluster.chunk_rows(short, rows, per_row, workers=workers))

    for workers in (1, 2, 8, 64):
        for rows in (10**5, 10**6, 3 * 10**6, 3 * 10**7, 10**9):
            chunks, size = count(rows, workers), cluster.chunk_rows(short, rows, workers=workers)
            assert size <= most
            if rows >= 2 * workers * least:  # enough work for two chunks a worker: at least that many
                assert chunks >= 2 * workers, (rows, workers, chunks)
            else:  # less: no chunk under 1 ms of work, unless the batch is
                assert size >= min(rows, least), (rows, workers, size)
    assert count(3 * 10**7, 0) == 4 and count(3 * 10**7, 2) == 4 and count(3 * 10**7, 8) == 16
    assert count(10**6, 2) == 1  # 1 ms of work: one task
    assert count(4 * 10**6, 8, per_row=8) >= 16  # rows of 8 points: the points count
    with dask.config.set({"subgraph_ad.chunk-points": 1000}):
        assert cluster.chunk_rows(short, 10**7, workers=8) == 1000


def test_entry_points_split_for_the_clients_two_workers(client):
    tape = sad.Tape()
    x = tape.var("x")
    short = sad.lambdify([x], sad.sin(x))
    assert short(da.zeros(10**7, chunks=10**7)).npartitions == 4  # 8.4e6 a chunk without the client
    assert sad.vmap(sad.grad(lambda x: np.sum(x ** 2)))(da.zeros((2 * 10**6, 3))).npartitions == 4
    estimate = sad.laplacian(lambda x: np.sum(x ** 3), samples=8)
    assert estimate(da.zeros((2 * 10**6, 3))).npartitions >= 4  # 8 probes a point: more work, more chunks
    assert short(da.zeros(1000)).npartitions == 1  # too little work to split


def test_sad_dask_is_public_and_in_the_reference():
    from pathlib import Path

    assert "dask" in sad.__all__ and sad.dask is cluster
    reference = (Path(__file__).resolve().parents[1] / "docs" / "reference.md").read_text(encoding="utf-8")
    assert "{#subgraph_ad.dask}" in reference  # its entry's anchor; tests/test_docs_site.py builds it


def _systems():
    from subgraph_ad.ode import traced

    return len(traced._SYSTEMS)


def test_an_ode_ensemble_on_dask_traces_its_system_once_per_worker_with_numpys_values(client):
    def pendulum(t, y):
        return np.array([y[1], -np.sin(y[0])])

    y0 = np.stack([np.linspace(0.1, 2.5, 40), np.linspace(0.5, -0.2, 40)])
    t_eval = np.linspace(0.0, 8.0, 5)
    want = sad.taylor_integrate(pendulum, (0.0, 8.0), y0, t_eval=t_eval, variational=True)
    before = client.run(_systems)
    got = sad.taylor_integrate(pendulum, (0.0, 8.0), da.from_array(y0, chunks=(2, 4)), t_eval=t_eval, variational=True)
    grown = {w: n - before[w] for w, n in client.run(_systems).items()}
    assert all(n <= 1 for n in grown.values()) and sum(grown.values()) >= 1, grown  # 10 tasks, a trace a worker
    for name in ("y", "sensitivity", "nsteps", "t_final", "y_final", "status"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    energy = 0.5 * got.y[1] ** 2 - np.cos(got.y[0])  # conserved along each trajectory
    assert np.max(np.abs(energy - energy[0])) < 1e-13  # tolerance ε per step, some hundred steps
