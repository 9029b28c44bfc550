# `make demo` and `make test` each set themselves up: a virtualenv in .venv and the Graphviz
# program (via apt when it is missing and apt is usable). `make demo` installs the package and its
# runtime dependencies only (NumPy, SymPy, graphviz, tqdm: under 300 MB); `make test` adds the
# dev extras to that same .venv (the test kit, the optional backends, JupyterLab, mkdocs).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEMO_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed-dev

.PHONY: demo test quick lint docs fuzz bench graphviz clean

$(DEMO_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10+ is needed, found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	@touch $(DEMO_STAMP)

# the test kit on top of the demo's .venv: an upgrade of it, never a second virtualenv
$(STAMP): $(DEMO_STAMP)
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

graphviz:
	@sh .ci/ensure-graphviz

demo: $(DEMO_STAMP) graphviz
	$(PY) examples/gaussian.py

test: $(STAMP) graphviz lint
	$(PY) -m pytest

# ruff, with the rules in pyproject.toml's [tool.ruff.lint]; `make test` runs it first
lint: $(STAMP)
	$(PY) -m ruff check .

# the every-few-minutes run: the suite without the tests that start a browser, JupyterLab or
# the documentation site build, or run whole programs (every example, the benchmarks' quick
# runs, `make demo` in a fresh clone, the console blocks of the docs, the deep and wide graphs),
# and without the tests marked slow (mypy, the order-200 and every-backend sweeps): those run
# in `make test`
QUICK_SKIP := tests/viz/test_browser.py tests/viz/test_jupyterlab.py tests/test_docs_site.py \
	tests/test_examples.py tests/test_benchmarks.py tests/test_make_demo.py tests/test_docs_console.py \
	tests/test_deep_wide.py
quick: $(STAMP) graphviz
	$(PY) -m pytest -m 'not slow' $(addprefix --ignore=,$(QUICK_SKIP))

# the documentation site (mkdocs.yml) into site/, warnings as errors; the API reference is
# rendered from the docstrings (tests/test_docs_site.py builds it in `make test` too)
docs: $(STAMP)
	$(PY) -m mkdocs build --strict --site-dir site

# the property-based and fuzz tests (every test that uses Hypothesis), with SAD_FUZZ times the
# examples of `make test` and fresh random seeds; FUZZ=200 by default, `make fuzz FUZZ=2000` for longer
FUZZ ?= 200
fuzz: $(STAMP) graphviz
	SAD_FUZZ=$(FUZZ) $(PY) -m pytest -o addopts=-q -p no:cacheprovider -m hypothesis tests

bench: $(STAMP) graphviz
	$(PY) -m pip install --quiet -e '.[bench]'
	@$(PY) -m pip install --quiet torch==2.13.0 || echo "PyTorch 2.13.0 (CPU build) could not be installed; the benchmark runs without it"
	$(PY) benchmarks/run.py --rounds 3
	$(PY) benchmarks/many_variables.py --rounds 5
	$(PY) benchmarks/operators.py
	$(PY) benchmarks/networks.py
	$(PY) benchmarks/transforms.py
	PYTHONPATH=. $(PY) benchmarks/compile.py --label after
	PYTHONPATH=. $(PY) benchmarks/arrays.py
	$(PY) benchmarks/ode.py
	$(PY) benchmarks/cluster.py

clean:
	rm -rf $(VENV) out .pytest_cache .ruff_cache benchmarks/results site
