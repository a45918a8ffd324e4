#!/usr/bin/env bash
# Installs what `make demo` and `make test` need on a fresh Debian machine, and nothing
# when it is already there. Idempotent; safe to run on every make invocation.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$ROOT/.work"
mkdir -p "$WORK"

# `setup.sh` installs what `make demo` needs; `setup.sh --all` also what every part of
# `make test` needs (the language toolchains' Debian packages), in one apt transaction:
# the per-language setup targets in mk/*.mk then find everything in place.
# `setup.sh --runc` adds what the demo needs to run its image under runc (as root).
ALL=0
RUNC=0
[ "${1:-}" = "--all" ] && ALL=1
[ "${1:-}" = "--runc" ] && RUNC=1

has_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-venv)
if [ "$ALL" = 1 ]; then
    command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
    command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
    command -v go >/dev/null 2>&1 || need_apt+=(golang-go)
    command -v javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
    command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
    command -v node >/dev/null 2>&1 || need_apt+=(nodejs npm)
    # The pools' Redis state store tests (Python, Go, JVM, Node) start their own redis-server,
    # as do the conformance harness (cases/pool.json) and conformance/test_pool_interop.py.
    command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
    # The runc backend's tests: the runtime, the image build (debootstrap, umoci), the
    # docker-archive and registry tests (skopeo, docker-registry, htpasswd from apache2-utils).
    for p in mono-mcs mono-runtime nunit-console libnunit-cil-dev nuget \
             runc debootstrap umoci skopeo docker-registry apache2-utils; do
        has_pkg "$p" || need_apt+=("$p")
    done
fi
if [ "$RUNC" = 1 ]; then
    for p in runc debootstrap umoci docker-registry; do
        has_pkg "$p" || need_apt+=("$p")
    done
fi
if ((${#need_apt[@]})); then
    echo "setup: installing Debian packages: ${need_apt[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# A private virtualenv for the project's Python tools (OpenAPI validation).
VENV="$WORK/venv"
if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import openapi_spec_validator, yaml' 2>/dev/null; then
    echo "setup: installing Python tools into $VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check openapi-spec-validator pyyaml
fi
# schemathesis for `make test-schema` (scripts/schemathesis.sh), pinned: its CLI flags change.
if [ "$("$VENV/bin/schemathesis" --version 2>/dev/null | awk '{print $NF}')" != "4.32.5" ]; then
    echo "setup: installing schemathesis into $VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check schemathesis==4.32.5
fi

# cargo fmt / clippy come with rustup's default profile; add them if missing.
if command -v rustup >/dev/null 2>&1; then
    cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
    cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
fi
