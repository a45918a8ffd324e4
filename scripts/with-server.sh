#!/usr/bin/env bash
# Runs a command against a freshly started reference server:
#   scripts/with-server.sh PATH/TO/opensandbox-server CMD [ARGS...]
# The server gets a free port and a throw-away data dir; the command sees
# OPEN_SANDBOX_DOMAIN and OPEN_SANDBOX_API_KEY, as every SDK reads them. Sandboxes are
# deleted and the server stopped when the command ends.
set -euo pipefail
BIN="${1:?usage: with-server.sh SERVER_BIN CMD...}"; shift
DATA="$(mktemp -d)"
KEY="bench-$RANDOM$RANDOM"
OUT="$DATA/server.out"
# The files exist before the server starts: the background job opens its redirections
# only once it runs, and the address loop below must never read a missing file.
: >"$OUT"; : >"$DATA/server.log"
# `--runtime bwrap`: the SDK tests run on bubblewrap (the host's directories) as before;
# `--runtime auto` would pick runc, whose images need a registry (scripts/local-registry.sh).
# `--output-framing lines`: the SDK suites' expectations are the June execd's line
# framing, like the conformance cases; the 1.1 kept framing (the server's default) is
# proven in every language by the conformance case commands/kept_framing_keeps_line_endings,
# and by the Python suite and the official tools (WITH_SERVER_FRAMING=kept).
# WITH_SERVER_ARGS: more server flags (word-split).
# shellcheck disable=SC2086
"$BIN" --listen 127.0.0.1:0 --api-key "$KEY" --data-dir "$DATA" --runtime "${WITH_SERVER_RUNTIME:-bwrap}" \
    --output-framing "${WITH_SERVER_FRAMING:-lines}" ${WITH_SERVER_ARGS:-} >"$OUT" 2>"$DATA/server.log" &
PID=$!
cleanup() {
    local ids
    ids=$(curl -fsS "http://$ADDR/v1/sandboxes?pageSize=200" -H "OPEN-SANDBOX-API-KEY: $KEY" 2>/dev/null \
        | python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)["items"]))' 2>/dev/null || true)
    for id in $ids; do curl -fsS -X DELETE "http://$ADDR/v1/sandboxes/$id" -H "OPEN-SANDBOX-API-KEY: $KEY" >/dev/null 2>&1 || true; done
    kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true
    rm -rf "$DATA"
}
ADDR=""
# Set before the wait, so that a server that never announces itself is stopped too.
trap cleanup EXIT
for _ in $(seq 1 100); do
    ADDR=$(sed -n 's/^opensandbox-server listening on //p' "$OUT" | head -n1)
    [ -n "$ADDR" ] && break
    kill -0 "$PID" 2>/dev/null || { cat "$DATA/server.log"; exit 1; }
    sleep 0.1
done
[ -n "$ADDR" ] || { echo "server did not start"; cat "$DATA/server.log"; exit 1; }
OPEN_SANDBOX_DOMAIN="$ADDR" OPEN_SANDBOX_API_KEY="$KEY" "$@"
