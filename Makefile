# The two promises: `make demo` and `make test`. Everything else is a building block.
# Every target installs what it needs (scripts/setup.sh) and shares one cargo target dir.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(CURDIR)/target
CARGO ?= cargo
VENV := $(CURDIR)/.work/venv
SERVER_DEBUG := $(CARGO_TARGET_DIR)/debug/opensandbox-server
SERVER_RELEASE := $(CARGO_TARGET_DIR)/release/opensandbox-server

.PHONY: help setup build build-release demo test lint fmt test-rust test-openapi \
        bench-server bench-core clean

help:
	@echo "make demo          build, start the reference server, walk through the quickstart"
	@echo "make test          every test of every part (what CI runs)"
	@echo "make lint          cargo fmt --check + clippy -D warnings"
	@echo "make test-rust     Rust unit and integration tests (core, server, agent)"
	@echo "make test-openapi  validate openapi/*.yaml as OpenAPI 3"
	@echo "make bench-server  reference-server benchmark (prints figures)"
	@echo "make bench-core    client-core streaming/transfer benchmark (prints figures)"

setup:
	@scripts/setup.sh

build: setup
	$(CARGO) build --workspace --all-targets

build-release: setup
	$(CARGO) build --release -p opensandbox-server

demo: build-release
	@scripts/demo.sh "$(SERVER_RELEASE)"

lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

test-openapi: setup
	$(VENV)/bin/python scripts/validate_openapi.py openapi/*.yaml

# The core's tests start the real server binary when OPENSANDBOX_SERVER_BIN is set.
test-rust: build
	OPENSANDBOX_SERVER_BIN="$(SERVER_DEBUG)" $(CARGO) test --workspace --no-fail-fast

test: lint test-openapi test-rust
	@echo "make test: all parts passed"

bench-server: build-release
	$(CARGO) run --release -p opensandbox-server --example bench

bench-core: build-release
	OPENSANDBOX_SERVER_BIN="$(SERVER_RELEASE)" $(CARGO) run --release -p opensandbox-core --example bench

clean:
	$(CARGO) clean
	rm -rf .work
