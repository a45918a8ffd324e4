# The Python package `opensandbox` (bindings/python): pyo3 extension + Python layer.
# The extension is built once, by cargo in the shared target dir (debug profile), and
# linked into the source tree for the tests and the conformance driver; the packaging
# test builds the abi3 wheel with maturin (dev profile, same target dir) and installs
# it into a fresh virtualenv. The code interpreter is its own distribution
# (bindings/python/code-interpreter/pyproject.toml, pure Python over ours), built with pip.
PY_VENV := $(CURDIR)/.work/pyvenv
PY := $(PY_VENV)/bin/python
PY_SRC := bindings/python/python
PY_NATIVE_LIB := $(CARGO_TARGET_DIR)/debug/libopensandbox_python.so
PY_NATIVE_LINK := $(PY_SRC)/opensandbox/_native.abi3.so

.PHONY: setup-python lint-python build-python test-python bench-python bench-prepare-python demo-python package-test-python official-tools-python

setup-python:
	@command -v python3 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-dev >/dev/null; }
	@test -x $(PY) || python3 -m venv $(PY_VENV) || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null && python3 -m venv $(PY_VENV); }
	@$(PY) -c "import maturin, pydantic, pytest, pytest_asyncio, ruff, unasync, mypy, redis" 2>/dev/null || \
	  $(PY) -m pip install -q --disable-pip-version-check "maturin==1.16.0" "pydantic>=2.4.2,<3" \
	    "pytest>=7" "pytest-asyncio>=0.23" "ruff==0.17.6" "unasync==0.6.0" "mypy==2.4.1" \
	    "redis==5.3.1"

build-python: setup-python build
	ln -sf "$(PY_NATIVE_LIB)" "$(PY_NATIVE_LINK)"

# ruff (lint + format), mypy --strict ([tool.mypy] in pyproject.toml) and the check that
# the sync API is what scripts/gen_sync.py generates from the async one.
lint-python: setup-python
	cd bindings/python && $(PY_VENV)/bin/ruff check -q python tests bench examples scripts && \
	  $(PY_VENV)/bin/ruff check -q --config pyproject.toml ../../conformance/drivers/python && \
	  $(PY_VENV)/bin/ruff format -q --check --config pyproject.toml python tests bench examples scripts ../../conformance/drivers/python && \
	  $(PY_VENV)/bin/mypy && $(PY) scripts/gen_sync.py --check

test-python: build-python lint-python
	cd bindings/python && OPENSANDBOX_SERVER_BIN="$(SERVER_DEBUG)" PYTHONPATH="$(CURDIR)/$(PY_SRC)" \
	  $(PY) -m pytest -q -p no:cacheprovider tests
	bindings/python/tests/packaging_test.sh "$(SERVER_DEBUG)" "$(PY)"
	bindings/python/scripts/official_tools.sh "$(SERVER_DEBUG)" "$(PY)" "$(CURDIR)/.work/python-package/wheels"

# The official opensandbox-cli / opensandbox-mcp 1.1.1 from PyPI on our two wheels
# (scratch venv and pip cache kept between runs under .work/python-official-tools).
official-tools-python: build-python
	bindings/python/scripts/official_tools.sh "$(SERVER_DEBUG)" "$(PY)"

package-test-python: build-python lint-python
	bindings/python/tests/packaging_test.sh "$(SERVER_DEBUG)" "$(PY)"

demo-python: build-python build
	scripts/with-server.sh "$(SERVER_DEBUG)" env PYTHONPATH="$(CURDIR)/$(PY_SRC)" $(PY) bindings/python/examples/quickstart.py

# `make bench` (root Makefile) runs bindings/python/bench/bench.sh after this.
bench-prepare-python: setup-python build-release
	bindings/python/bench/prepare.sh "$(PY)"

bench-python: bench-prepare-python
	scripts/with-server.sh "$(SERVER_RELEASE)" python3 scripts/bench/run.py python

BENCH_LANGS += python
BINDING_TESTS += test-python
SETUP_ALL += setup-python
DRIVER_BUILDS += build-python
