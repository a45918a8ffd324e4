#!/usr/bin/env bash
# `make demo`: start the reference server with its embedded store and run the Python
# quickstart (bindings/python/examples/quickstart.py) against it through the
# `opensandbox` package: async and sync API, files, commands, streamed handlers.
set -euo pipefail

BIN="${1:?usage: demo.sh PATH/TO/opensandbox-server}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DATA="$ROOT/.work/demo-data"
PORT="${DEMO_PORT:-18480}"
KEY="demo-key"
BASE="http://127.0.0.1:$PORT"
LOG="$ROOT/.work/demo-server.log"
PY="$ROOT/.work/pyvenv/bin/python"
rm -rf "$DATA"; mkdir -p "$DATA"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# The package: the extension built by `make build-python` (built here if missing).
if ! PYTHONPATH="$ROOT/bindings/python/python" "$PY" -c "import opensandbox._native" >/dev/null 2>&1; then
    say "Building the Python package (make build-python)"
    make -C "$ROOT" -s build-python
fi

# As root the sandboxes run the image under runc: the local Debian image (built once by
# scripts/build-image.sh, cached per machine) pushed to a loopback registry as
# `python:3.11`, so the quickstart's image name resolves without Docker Hub. Without root
# (or with DEMO_RUNTIME=bwrap) bubblewrap runs them over the host's own directories.
RUNTIME="${DEMO_RUNTIME:-}"
MIRROR=()
REG_DIR="$ROOT/.work/demo-registry"
if [ -z "$RUNTIME" ] && [ "$(id -u)" -eq 0 ]; then
    say "Preparing the image (runc, a local Debian image with Python, a loopback registry)"
    "$ROOT/scripts/setup.sh" --runc
    "$ROOT/scripts/build-image.sh"
    rm -rf "$REG_DIR"
    if ADDR="$(REGISTRY_IMAGES=library/python:3.11 "$ROOT/scripts/local-registry.sh" start "$REG_DIR" "$BIN")"; then
        RUNTIME=runc
        MIRROR=(--registry-mirror "$ADDR")
    else
        echo "The loopback registry did not start: running the sandboxes under bubblewrap."
    fi
fi
RUNTIME="${RUNTIME:-bwrap}"

start_server() {
    "$BIN" --listen "127.0.0.1:$PORT" --api-key "$KEY" --data-dir "$DATA" --runtime "$RUNTIME" "${MIRROR[@]}" "$@" >"$LOG" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        curl -fsS "$BASE/health" >/dev/null 2>&1 && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
stop_server() {
    { [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; } || true
    "$ROOT/scripts/local-registry.sh" stop "$REG_DIR" || true
}
trap stop_server EXIT

say "Starting opensandbox-server on $BASE (runtime $RUNTIME, store: $DATA/opensandbox.db)"
if ! start_server; then
    echo "The server refused to start with namespace isolation:"; tail -n 5 "$LOG"
    echo "Retrying with --isolation none (NO ISOLATION: demo only)."
    start_server --isolation none || { cat "$LOG"; exit 1; }
fi

say "The Python quickstart (bindings/python/examples/quickstart.py)"
sed -n '/^async def main/,$p' "$ROOT/bindings/python/examples/quickstart.py" | sed 's/^/    /'

say "Running it"
OPEN_SANDBOX_DOMAIN="127.0.0.1:$PORT" OPEN_SANDBOX_API_KEY="$KEY" \
    PYTHONPATH="$ROOT/bindings/python/python" "$PY" "$ROOT/bindings/python/examples/quickstart.py"

say "Done: the sandboxes were killed by the quickstart; the server stops now"
