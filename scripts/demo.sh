#!/usr/bin/env bash
# `make demo`: start the reference server with its embedded store and walk through the
# protocol with plain HTTP (curl), printing what a user would see.
set -euo pipefail

BIN="${1:?usage: demo.sh PATH/TO/opensandbox-server}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DATA="$ROOT/.work/demo-data"
PORT="${DEMO_PORT:-18480}"
KEY="demo-key"
BASE="http://127.0.0.1:$PORT"
LOG="$ROOT/.work/demo-server.log"
rm -rf "$DATA"; mkdir -p "$DATA"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show_stream() { while IFS= read -r line; do if [ -n "$line" ]; then echo "  $line"; fi; done; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {'d': d}))" "$1"; }

start_server() {
    "$BIN" --listen "127.0.0.1:$PORT" --api-key "$KEY" --data-dir "$DATA" "$@" >"$LOG" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        curl -fsS "$BASE/health" >/dev/null 2>&1 && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
stop_server() { [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true; }
trap stop_server EXIT

say "Starting opensandbox-server on $BASE (store: $DATA/opensandbox.db)"
if ! start_server; then
    echo "The server refused to start with namespace isolation:"; tail -n 5 "$LOG"
    echo "Retrying with --isolation none (NO ISOLATION: demo only)."
    start_server --isolation none || { cat "$LOG"; exit 1; }
fi
curl -fsS "$BASE/health"; echo

say "Create a sandbox"
echo "\$ curl -X POST $BASE/v1/sandboxes -H 'OPEN-SANDBOX-API-KEY: $KEY' -d '{\"image\":{\"uri\":\"python:3.11\"},...}'"
CREATED=$(curl -fsS -X POST "$BASE/v1/sandboxes" -H "OPEN-SANDBOX-API-KEY: $KEY" \
    -H 'Content-Type: application/json' \
    -d '{"image":{"uri":"python:3.11"},"entrypoint":["tail","-f","/dev/null"],"timeout":600,
         "resourceLimits":{"cpu":"1","memory":"2Gi"},"metadata":{"project":"demo"}}')
echo "$CREATED" | python3 -m json.tool
ID=$(echo "$CREATED" | json 'd["id"]')

say "Resolve the execd endpoint (port 44772)"
EP_JSON=$(curl -fsS "$BASE/v1/sandboxes/$ID/endpoints/44772?use_server_proxy=true" -H "OPEN-SANDBOX-API-KEY: $KEY")
echo "$EP_JSON" | python3 -m json.tool
EXECD="http://$(echo "$EP_JSON" | json 'd["endpoint"]')"
TOKEN_HEADER=$(echo "$EP_JSON" | json '"; ".join(k + ": " + v for k, v in (d.get("headers") or {}).items())')
H=(-H "$TOKEN_HEADER")

for _ in $(seq 1 50); do curl -fsS "${H[@]}" "$EXECD/ping" >/dev/null 2>&1 && break; sleep 0.1; done

say "Run a command; events stream back as they happen"
echo "\$ curl -N -X POST $EXECD/command -d '{\"command\":\"...\"}'"
curl -fsS -N -X POST "$EXECD/command" "${H[@]}" -H 'Content-Type: application/json' \
    -d '{"command":"echo hello from $(hostname); for i in 1 2 3; do echo tick $i; sleep 0.3; done; echo oops >&2; exit 3"}' \
    | show_stream

say "Upload a file (multipart: a metadata part and a file part)"
TMP=$(mktemp -d)
printf 'first line\nsecond line\nthird line\n' >"$TMP/notes.txt"
printf '{"path":"/workspace/notes.txt","mode":644}' >"$TMP/meta.json"
curl -fsS -X POST "$EXECD/files/upload" "${H[@]}" \
    -F "metadata=@$TMP/meta.json;filename=metadata;type=application/json" \
    -F "file=@$TMP/notes.txt;type=application/octet-stream" && echo "  uploaded /workspace/notes.txt"
curl -fsS "${H[@]}" "$EXECD/files/info?path=/workspace/notes.txt" | python3 -m json.tool

say "Download it back, whole and as lines 2..3"
curl -fsS "${H[@]}" "$EXECD/files/download?path=/workspace/notes.txt" | sed 's/^/  /'
curl -fsS "${H[@]}" "$EXECD/files/download?path=/workspace/notes.txt&offset=2&limit=2" | sed 's/^/  /'; echo

say "Run Python in a stateful code context"
CTX=$(curl -fsS -X POST "$EXECD/code/context" "${H[@]}" -H 'Content-Type: application/json' -d '{"language":"python"}')
echo "  context: $CTX"
CTX_ID=$(echo "$CTX" | json 'd["id"]')
curl -fsS -N -X POST "$EXECD/code" "${H[@]}" -H 'Content-Type: application/json' \
    -d "{\"code\":\"x = 21\\nprint('computing...')\",\"context\":{\"id\":\"$CTX_ID\"}}" \
    | show_stream
echo "  -- a second cell sees x --"
curl -fsS -N -X POST "$EXECD/code" "${H[@]}" -H 'Content-Type: application/json' \
    -d "{\"code\":\"x * 2\",\"context\":{\"id\":\"$CTX_ID\"}}" \
    | show_stream

say "Delete the sandbox"
curl -fsS -o /dev/null -w '  DELETE -> HTTP %{http_code}\n' -X DELETE "$BASE/v1/sandboxes/$ID" -H "OPEN-SANDBOX-API-KEY: $KEY"
rm -rf "$TMP"

say "Done. Server log: $LOG"
