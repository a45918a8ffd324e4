# The two promises: `make demo` and `make test`. Everything else is a building block.
# Every target installs what it needs (scripts/setup.sh) and shares one cargo target dir.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(CURDIR)/target
CARGO ?= cargo
# A CI run builds everything once from nothing: incremental compilation data would
# only cost time there (it is kept for local rebuilds).
ifeq ($(CI),true)
export CARGO_INCREMENTAL ?= 0
# In CI the one workspace build also runs clippy's lints while it compiles (clippy-driver
# as the workspace members' compiler wrapper, the same thing `cargo clippy` does), and
# `make lint` reads the warnings cargo replays from that build instead of type-checking
# the workspace a second time (about a minute of a fresh run).
export RUSTC_WORKSPACE_WRAPPER ?= $(shell rustc --print sysroot)/bin/clippy-driver
endif
VENV := $(CURDIR)/.work/venv
SERVER_DEBUG := $(CARGO_TARGET_DIR)/debug/opensandbox-server
SERVER_RELEASE := $(CARGO_TARGET_DIR)/release/opensandbox-server
# Conformance runs the cases' images under runc (pulled from a loopback registry fed with
# the local image) where runc works here, else under bubblewrap, else without isolation
# (the cases that need isolation are then skipped and counted as such); the script says
# which and why.
CONFORMANCE_ISOLATION ?= $(shell scripts/conformance-isolation.sh)

# Each language package brings its own targets in mk/<lang>.mk: setup-<lang>,
# build-<lang> (everything its conformance driver needs), test-<lang>, bench-<lang>.
# It appends its test target to BINDING_TESTS and its build target to DRIVER_BUILDS,
# so `make test` and `make conformance` pick it up without edits here.
BINDING_TESTS :=
DRIVER_BUILDS :=
# And, when it has a runner bindings/<lang>/bench/bench.sh for `make bench`, its name
# to BENCH_LANGS with a bench-prepare-<lang> target that builds what the runner needs.
BENCH_LANGS :=
# And its setup target (tools, packages) to SETUP_ALL, which `make prepare` runs.
SETUP_ALL :=
include $(sort $(wildcard mk/*.mk))

.PHONY: help setup prepare build build-release demo test lint fmt test-rust test-openapi \
        bench bench-server bench-core conformance conformance-pool-interop build-rust clean test-schema

help:
	@echo "make demo          build, start the reference server, walk through the quickstart"
	@echo "make test          every test of every part (what CI runs)"
	@echo "make lint          cargo fmt --check + clippy -D warnings"
	@echo "make test-rust     Rust unit and integration tests (core, server, agent)"
	@echo "make test-openapi  validate openapi/*.yaml as OpenAPI 3"
	@echo "make test-schema   schemathesis over the lifecycle and execd APIs (0 server errors)"
	@echo "make conformance   the conformance matrix: every case through every language driver"
	@echo "make conformance-rust  one column of it (rust)"
	@echo "make conformance-pool-interop  one Redis pool shared by the python, go, java and node drivers"
	@echo "make bench         every language (ours, official, curl limit) on one release server: one table"
	@echo "make bench-server  reference-server benchmark (prints figures)"
	@echo "make bench-core    client-core streaming/transfer benchmark (prints figures)"

setup:
	@scripts/setup.sh

# Every crate of the workspace, every target, in one cargo invocation: features are
# unified once, so each crate compiles once per run. Every other target that needs a
# debug artifact (the bindings' libraries, the drivers, the test binaries) depends on
# this one and never calls `cargo build -p` (that resolves features anew and rebuilds
# the dependency graph).
build: setup
	$(CARGO) build --workspace --all-targets

# The first part of `make test`: the one workspace build (CPU) and, at the same time,
# everything the later parts download (network): Debian packages in one apt transaction,
# each language's tools (SETUP_ALL), and the local OCI image the runc tests run
# (scripts/build-image.sh, cached per machine). Both logs are printed when both are done.
prepare:
	@mkdir -p .work
	@( scripts/setup.sh --all && $(MAKE) --no-print-directory $(SETUP_ALL) && scripts/build-image.sh ) \
	    >.work/prepare.log 2>&1 & \
	  pid=$$!; $(CARGO) build --workspace --all-targets; built=$$?; wait $$pid; fetched=$$?; \
	  sed 's/^/prepare: /' .work/prepare.log; \
	  [ $$fetched -eq 0 ] || echo "prepare: fetching tools and packages FAILED (log above)"; \
	  [ $$built -eq 0 ] && [ $$fetched -eq 0 ]

# Release libraries and binaries of the whole workspace, for the benchmarks.
build-release: setup
	$(CARGO) build --release --workspace --lib --bins

# The demo runs only the server and the Python package: one release invocation for the
# two, and the package's native module linked to the release library.
demo: setup-python
	$(CARGO) build --release -p opensandbox-server -p opensandbox-python
	ln -sf "$(CARGO_TARGET_DIR)/release/libopensandbox_python.so" "$(PY_NATIVE_LINK)"
	@scripts/demo.sh "$(SERVER_RELEASE)"

lint: setup
	$(CARGO) fmt --all -- --check
ifneq ($(findstring clippy-driver,$(RUSTC_WORKSPACE_WRAPPER)),)
	@# Nothing is compiled here: every unit is fresh, and cargo replays its diagnostics.
	@mkdir -p .work; $(CARGO) build --workspace --all-targets 2>&1 | tee .work/lint.log | grep -E '^(warning|error)' \
	    && { echo "lint: clippy or rustc warnings above (as 'cargo clippy -- -D warnings' would fail)"; exit 1; } || true
else
	$(CARGO) clippy --workspace --all-targets -- -D warnings
endif
	python3 scripts/workspace_hack.py --check
	python3 scripts/check_test_targets.py

fmt:
	$(CARGO) fmt --all

test-openapi: setup
	$(VENV)/bin/python scripts/validate_openapi.py openapi/*.yaml

# Property-based requests from openapi/{lifecycle,execd}.yaml against a debug server;
# any 5xx fails. Bounded to 150 s overall (scripts/schemathesis.sh says how).
test-schema: build
	scripts/schemathesis.sh "$(SERVER_DEBUG)"

# The core's tests start the real server binary when OPENSANDBOX_SERVER_BIN is set.
test-rust: build
	OPENSANDBOX_SERVER_BIN="$(SERVER_DEBUG)" $(CARGO) test --workspace --no-fail-fast

# The harness's own unit tests, the cross-language Redis pool test (a pool warmed by the
# Python driver taken from by Go, Java and Node, and back), then the matrix, whose last
# line, "N passed, N failed", stays the target's last line; the target fails when either
# of the two failed.
conformance: build $(DRIVER_BUILDS)
	python3 conformance/test_harness.py
	@python3 conformance/test_pool_interop.py --server "$(SERVER_DEBUG)"; interop=$$?; \
	  CONFORMANCE_ISOLATION=$(CONFORMANCE_ISOLATION) python3 conformance/harness.py --server "$(SERVER_DEBUG)"; matrix=$$?; \
	  [ $$interop -eq 0 ] || echo "conformance: the cross-language pool test (conformance/test_pool_interop.py) FAILED" >&2; \
	  [ $$interop -eq 0 ] && [ $$matrix -eq 0 ]

# The cross-language pool test alone (needs the python, go, java and node drivers).
conformance-pool-interop: build build-python build-go build-java build-node
	python3 conformance/test_pool_interop.py --server "$(SERVER_DEBUG)"

build-rust: build

conformance-%: build build-%
	CONFORMANCE_ISOLATION=$(CONFORMANCE_ISOLATION) python3 conformance/harness.py --server "$(SERVER_DEBUG)" --lang $*

# Each part runs as its own make, in this order, with its time printed (a slow part
# shows in every CI log); a failed part does not stop the others. `A+B` runs two parts
# at once: the schema fuzzer (CPU: hypothesis and the server) beside the Rust tests
# (mostly waiting on containers), each with its own server, data dir and runc state.
TEST_PARTS := prepare lint test-openapi test-schema+test-rust $(BINDING_TESTS) conformance
test:
	@scripts/run-parts.sh $(TEST_PARTS)
	@echo "make test: all parts passed"

# One release server, the curl limit and every language's runner (official package
# beside ours where one installs here), BENCH_REPEAT rounds (default 3), one table
# (scripts/bench/run.py). BENCH_LANGS="python go" picks languages.
bench: build-release $(addprefix bench-prepare-,$(BENCH_LANGS))
	scripts/with-server.sh "$(SERVER_RELEASE)" python3 scripts/bench/run.py $(BENCH_LANGS)

bench-server: build-release
	$(CARGO) bench -p opensandbox-server --bench server

bench-core: build-release
	$(CARGO) build --release --workspace --examples
	scripts/with-server.sh "$(SERVER_RELEASE)" $(CARGO_TARGET_DIR)/release/examples/bench_stream

clean:
	$(CARGO) clean
	rm -rf .work
