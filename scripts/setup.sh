#!/usr/bin/env bash
# Installs what `make demo` and `make test` need on a fresh Debian machine, and nothing
# when it is already there. Idempotent; safe to run on every make invocation.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$ROOT/.work"
mkdir -p "$WORK"

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-venv)
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

# cargo fmt / clippy come with rustup's default profile; add them if missing.
if command -v rustup >/dev/null 2>&1; then
    cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
    cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
fi
