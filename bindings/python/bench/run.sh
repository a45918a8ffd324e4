#!/usr/bin/env bash
# `make bench-python`: the official opensandbox 1.1.1 (its own virtualenv, from PyPI)
# against this package (release build of the extension), same release server, one run.
#   bindings/python/bench/run.sh SERVER_RELEASE PYTHON_WITH_MATURIN
set -euo pipefail
SERVER="$(realpath "${1:?usage: run.sh SERVER_RELEASE PYTHON}")"
PY="${2:?usage: run.sh SERVER_RELEASE PYTHON}"
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

cd "$WORK"
"$ROOT/scripts/with-server.sh" "$SERVER" bash -c '
    env -u PYTHONPATH "$1/official/bin/python" -I "$2" > "$1/official.json"
    env -u PYTHONPATH "$1/ours/bin/python" -I "$2" > "$1/ours.json"
' _ "$WORK" "$ROOT/bindings/python/bench/bench.py"

python3 - "$WORK/official.json" "$WORK/ours.json" <<'PYEOF'
import json, sys
off = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
ours = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
rows = [("import time", "import_ms", "ms", False), ("files.get_file_info p50", "file_info_p50_ms", "ms", False),
        ('commands.run("true") p50', "run_true_p50_ms", "ms", False),
        ("100 MB stdout into a handler", "stdout_mb_s", "MB/s", True),
        ("256 MB upload", "upload_mb_s", "MB/s", True), ("256 MB download", "download_mb_s", "MB/s", True)]
print(f"\n{'operation':32} {'official 1.1.1':>16} {'ours':>12} {'speed-up':>9}")
for name, key, unit, higher in rows:
    a, b = off[key], ours[key]
    ratio = (b / a) if higher else (a / b)
    print(f"{name:32} {a:>11.2f} {unit:<4} {b:>7.2f} {unit:<4} {ratio:>8.2f}x")
print("(speed-up > 1: ours is faster; times are lower-is-better, rates higher-is-better)")
PYEOF
