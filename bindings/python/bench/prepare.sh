#!/usr/bin/env bash
# Prepares `make bench` for Python: the official opensandbox 1.1.1 (its own virtualenv,
# from PyPI) and this package (release build of the extension, as a wheel) in another.
#   bindings/python/bench/prepare.sh PYTHON_WITH_MATURIN
set -euo pipefail
PY="${1:?usage: prepare.sh PYTHON}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
WORK="$ROOT/.work/python-bench"
mkdir -p "$WORK"

if [ ! -x "$WORK/official/bin/python" ] || ! "$WORK/official/bin/python" -c "import opensandbox" 2>/dev/null; then
    echo "bench: installing the official opensandbox==1.1.1 into $WORK/official"
    "$PY" -m venv "$WORK/official"
    "$WORK/official/bin/pip" install -q --disable-pip-version-check "opensandbox==1.1.1"
fi
echo "bench: building this package (release wheel) into $WORK/ours"
rm -rf "$WORK/wheels"
"$(dirname "$PY")/maturin" build --quiet --release -m "$ROOT/bindings/python/Cargo.toml" --out "$WORK/wheels"
[ -x "$WORK/ours/bin/python" ] || "$PY" -m venv "$WORK/ours"
"$WORK/ours/bin/pip" install -q --disable-pip-version-check --force-reinstall "$WORK"/wheels/opensandbox-*.whl
