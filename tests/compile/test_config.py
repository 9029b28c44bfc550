"""The default backend (``subgraph_ad.compile.config``): NumPy unless ``SUBGRAPH_AD_BACKEND`` or
``config.backend`` says otherwise; a call's own ``backend=`` wins; a default that names no
backend is refused, naming where it came from. Traced transforms compile with it."""

import numpy as np
import pytest

import subgraph_ad as sad
from subgraph_ad.compile import config


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv("SUBGRAPH_AD_BACKEND", raising=False)
    monkeypatch.setattr(config, "backend", None)
    monkeypatch.setenv("SUBGRAPH_AD_CACHE", "off")


def _function():
    tape = sad.Tape()
    x = tape.var("x")
    return x, sad.sin(x) * x


POINTS = np.linspace(-2, 2, 9)


def test_numpy_by_default():
    x, z = _function()
    f = sad.lambdify([x], z)
    assert f.backend == "numpy" and np.allclose(f(POINTS), np.sin(POINTS) * POINTS, rtol=1e-15)


def test_the_environment_variable_chooses_the_default(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("SUBGRAPH_AD_BACKEND", "numba")
    x, z = _function()
    f = sad.lambdify([x], z)
    assert np.allclose(f(POINTS), np.sin(POINTS) * POINTS, rtol=1e-15)
    assert f.backend == "numba" and f.built == ("numba (array)",)
    assert sad.lambdify([x], z, backend="numpy").backend == "numpy"  # a call's own choice wins


def test_set_in_code_it_wins_over_the_environment(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("SUBGRAPH_AD_BACKEND", "numpy")
    monkeypatch.setattr(config, "backend", "numba")
    x, z = _function()
    assert sad.lambdify([x], z).backend == "numba"


@pytest.mark.parametrize("where", ["environment", "code"])
def test_a_default_that_is_no_backend_is_refused_with_its_origin(monkeypatch, where):
    if where == "environment":
        monkeypatch.setenv("SUBGRAPH_AD_BACKEND", "fortran")
    else:
        monkeypatch.setattr(config, "backend", "fortran")
    x, z = _function()
    with pytest.raises(ValueError, match="default backend is 'fortran'.*SUBGRAPH_AD_BACKEND.*expected 'numpy' or 'numba'"):
        sad.lambdify([x], z)
    with pytest.raises(ValueError, match="lambdify backend must be"):
        sad.lambdify([x], z, backend="fortran")
