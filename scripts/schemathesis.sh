#!/usr/bin/env bash
# Property-based API tests of the reference server (`make test-schema`):
#   scripts/schemathesis.sh PATH/TO/opensandbox-server
# Starts the server (scripts/with-server.sh, bubblewrap runtime), runs schemathesis over
# openapi/lifecycle.yaml (API key header) and over openapi/execd.yaml against one
# sandbox's execd through the server proxy (its access token header). The checks are
# `not_a_server_error` (any 5xx is a bug) and that every status code, content type,
# response header and body is the one the spec documents (SCHEMA_CHECKS overrides).
# Bound: --max-examples and --max-time per spec, --request-timeout per request, and an
# overall `timeout` (SCHEMA_TIMEOUT, default 90 s) around the whole run.
# Exclusions, so the run neither destroys itself nor the host (bwrap sandboxes see the
# host's directories):
#   lifecycle: the stateful phase (it would chain create/delete over real sandboxes);
#              the proxy route (fuzzed via execd.yaml instead).
#   execd:     every route that writes or deletes files or directories, and the
#              endless SSE streams (/metrics/watch, /command/{id}/logs follow);
#              the 1.1 `/v1/...` routes (isolated sessions, identity files): under
#              bubblewrap they answer 503 by design (no nested isolation, ids not
#              mapped), and their writes are the file routes' (tested elsewhere:
#              server/tests/isolated_runc.rs, conformance areas isolated, identity_files).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:?usage: schemathesis.sh SERVER_BIN}"
ST="${SCHEMATHESIS:-.work/venv/bin/schemathesis}"
EXAMPLES="${SCHEMA_EXAMPLES:-20}"
PER_SPEC="${SCHEMA_MAX_TIME:-30}"
if [ -z "${OPEN_SANDBOX_DOMAIN:-}" ]; then
    exec timeout --signal=TERM --kill-after=5 "${SCHEMA_TIMEOUT:-90}" \
        scripts/with-server.sh "$BIN" "$0" "$BIN"
fi
H="OPEN-SANDBOX-API-KEY: $OPEN_SANDBOX_API_KEY"
BASE="http://$OPEN_SANDBOX_DOMAIN/v1"
CHECKS="${SCHEMA_CHECKS:-not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance}"
common=(--checks "$CHECKS" --max-examples "$EXAMPLES" --max-time "$PER_SPEC"
        --request-timeout 5 --phases examples,coverage,fuzzing --workers 1
        # One worker: hypothesis parses lambdas with `ast` and CPython 3.11 fails that across
        # threads now and then ("AST constructor recursion depth mismatch").
        --suppress-health-check all --no-color --generation-allow-x00 false)
# The sandbox whose execd is fuzzed, and execd before lifecycle: schemathesis reuses ids
# it reads from responses (GET /sandboxes) even outside the stateful phase, so the
# lifecycle run deletes every live sandbox it finds (a 204, as it should).
id=$(curl -fsS -X POST "$BASE/sandboxes" -H "$H" -H 'Content-Type: application/json' \
    -d '{"image":{"uri":"ubuntu"},"entrypoint":["tail","-f","/dev/null"],"resourceLimits":{"cpu":"1","memory":"512Mi"}}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
ep=$(curl -fsS "$BASE/sandboxes/$id/endpoints/44772" -H "$H")
url=$(python3 -c 'import json,sys; e=json.loads(sys.argv[1])["endpoint"]; print(e if "://" in e else "http://"+e)' "$ep")
tok=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("headers",{}).get("X-EXECD-ACCESS-TOKEN",""))' "$ep")
for _ in $(seq 1 50); do curl -fsS "$url/ping" -H "X-EXECD-ACCESS-TOKEN: $tok" >/dev/null 2>&1 && break; sleep 0.1; done
rc=0
echo "schema: execd API of sandbox $id at $url"
"$ST" run openapi/execd.yaml --url "$url" -H "X-EXECD-ACCESS-TOKEN: $tok" "${common[@]}" \
    --exclude-path-regex '^/(files|directories)$|^/files/(mv|replace|permissions|upload)$|^/metrics/watch$|/logs$|^/v1/' \
    || rc=1
# The execd run means something only if it reached a live agent the whole time.
curl -fsS "$url/ping" -H "X-EXECD-ACCESS-TOKEN: $tok" >/dev/null \
    || { echo "schema: sandbox $id no longer answers /ping"; rc=1; }
echo "schema: lifecycle API at $BASE"
"$ST" run openapi/lifecycle.yaml --url "$BASE" -H "$H" "${common[@]}" \
    --exclude-path-regex '/proxy/' || rc=1
exit "$rc"
