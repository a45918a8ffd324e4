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
"$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$WORK/wheels" "$ROOT/bindings/python/code-interpreter"
WHEEL="$(ls "$WORK"/wheels/opensandbox-1.1.1-*.whl)"
CI_WHEEL="$(ls "$WORK"/wheels/opensandbox_code_interpreter-1.1.1-py3-none-any.whl)"
case "$WHEEL" in *-cp39-abi3-*) ;; *) echo "packaging: not an abi3 (cp39) wheel: $WHEEL"; exit 1;; esac

"$PY" - "$WHEEL" "$CI_WHEEL" <<'PYEOF'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = ["opensandbox/__init__.py", "opensandbox/py.typed", "opensandbox/_native.pyi",
        "opensandbox/sync/sandbox.py", "opensandbox/models/templates.py",
        "opensandbox/adapters/converter/__init__.py", "opensandbox/api/execd/models/__init__.py",
        "opensandbox/pool.py", "opensandbox/sync/pool.py", "opensandbox/pool_redis.py", "opensandbox/redis_pool_store.py"]
missing = [n for n in need if n not in names]
natives = [n for n in names if n.startswith("opensandbox/_native") and n.endswith(".so")]
# The code interpreter is its own distribution, as the official: never in this wheel.
stray = sorted(n for n in names if n.startswith("code_interpreter/"))
if missing or len(natives) != 1 or stray:
    sys.exit(f"packaging: bad wheel contents: missing={missing} natives={natives} stray={stray[:3]}")
ci = set(zipfile.ZipFile(sys.argv[2]).namelist())
ci_need = ["code_interpreter/__init__.py", "code_interpreter/py.typed", "code_interpreter/sync/code_interpreter.py"]
ci_missing = [n for n in ci_need if n not in ci]
ci_stray = sorted(n for n in ci if n.startswith("opensandbox/"))
if ci_missing or ci_stray:
    sys.exit(f"packaging: bad code-interpreter wheel: missing={ci_missing} stray={ci_stray[:3]}")
print(f"packaging: wheels ok ({len(names)} files, native module {natives[0]}; code interpreter {len(ci)} files)")
PYEOF

echo "packaging: installing into a fresh virtualenv"
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check "$WHEEL" "$CI_WHEEL"
"$WORK/venv/bin/python" -I -c "import code_interpreter, opensandbox, httpx; assert opensandbox.__version__ == '1.1.1'"
# Pools import without the extra; the Redis stores name the extra to install.
"$WORK/venv/bin/python" -I - <<'PYEOF'
from opensandbox import SandboxPool, SandboxPoolAsync
try:
    import opensandbox.pool_redis
except ImportError as e:
    assert "opensandbox[pool-redis]" in str(e), e
else:
    raise SystemExit("packaging: opensandbox.pool_redis imported without the pool-redis extra")
PYEOF

echo "packaging: running the README quickstart against a fresh server"
cp "$ROOT/bindings/python/examples/quickstart.py" "$WORK/quickstart.py"
cd "$WORK"
OUT="$("$ROOT/scripts/with-server.sh" "$SERVER" env -u PYTHONPATH "$WORK/venv/bin/python" -I quickstart.py 2>&1)" || { echo "$OUT"; echo "packaging: the quickstart failed"; exit 1; }
echo "$OUT" | sed 's/^/  | /'
for want in "Hello World" "streamed: two" "state: Running" "hi from the sync API" "exit code: 3"; do
    grep -qF "$want" <<<"$OUT" || { echo "packaging: quickstart output lacks '$want'"; exit 1; }
done
echo "packaging: ok"
