#!/usr/bin/env bash
# Packaging test: build the abi3 wheel with maturin (dev profile, shared target dir, so
# dependencies are not recompiled), check its contents, install it into a fresh
# virtualenv under .work/, and run the README quickstart against a fresh server, from a
# directory outside the checkout (so only the installed wheel can be imported).
#   bindings/python/tests/packaging_test.sh SERVER_BIN PYTHON_WITH_MATURIN
set -euo pipefail
SERVER="$(realpath "${1:?usage: packaging_test.sh SERVER_BIN PYTHON}")"
PY="${2:?usage: packaging_test.sh SERVER_BIN PYTHON}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
WORK="$ROOT/.work/python-package"
rm -rf "$WORK"; mkdir -p "$WORK/wheels"

echo "packaging: building the wheel"
"$(dirname "$PY")/maturin" build --quiet --profile dev -m "$ROOT/bindings/python/Cargo.toml" --out "$WORK/wheels"
WHEEL="$(ls "$WORK"/wheels/opensandbox-*.whl)"
case "$WHEEL" in *-cp39-abi3-*) ;; *) echo "packaging: not an abi3 (cp39) wheel: $WHEEL"; exit 1;; esac

"$PY" - "$WHEEL" <<'PYEOF'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = ["opensandbox/__init__.py", "opensandbox/py.typed", "opensandbox/_native.pyi",
        "code_interpreter/__init__.py", "opensandbox/sync/sandbox.py"]
missing = [n for n in need if n not in names]
natives = [n for n in names if n.startswith("opensandbox/_native") and n.endswith(".so")]
if missing or len(natives) != 1:
    sys.exit(f"packaging: bad wheel contents: missing={missing} natives={natives}")
print(f"packaging: wheel ok ({len(names)} files, native module {natives[0]})")
PYEOF

echo "packaging: installing into a fresh virtualenv"
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check "$WHEEL"

echo "packaging: running the README quickstart against a fresh server"
cp "$ROOT/bindings/python/examples/quickstart.py" "$WORK/quickstart.py"
cd "$WORK"
OUT="$("$ROOT/scripts/with-server.sh" "$SERVER" env -u PYTHONPATH "$WORK/venv/bin/python" -I quickstart.py 2>&1)" || { echo "$OUT"; echo "packaging: the quickstart failed"; exit 1; }
echo "$OUT" | sed 's/^/  | /'
for want in "Hello World" "streamed: two" "state: Running" "hi from the sync API" "exit code: 3"; do
    grep -qF "$want" <<<"$OUT" || { echo "packaging: quickstart output lacks '$want'"; exit 1; }
done
echo "packaging: ok"
