#!/usr/bin/env bash
# Property-based API tests of the reference server (`make test-schema`):
#   scripts/schemathesis.sh PATH/TO/opensandbox-server
# Starts the server (scripts/with-server.sh) on runc with the local image where this
# machine can run it (root, runc, .work/images/debian-python), else on bubblewrap, runs
# schemathesis over openapi/lifecycle.yaml (API key header) and over openapi/execd.yaml
# against one sandbox's execd through the server proxy (its access token header). The
# checks are `not_a_server_error` (any 5xx is a bug) and that every status code, content
# type, response header and body is the one the spec documents (SCHEMA_CHECKS overrides).
# Bound: --max-examples and --max-time per run, --request-timeout per request, and an
# overall `timeout` (SCHEMA_TIMEOUT, default 150 s) around the whole run.
# What is left out, so the run neither destroys itself nor the host:
#   lifecycle: the stateful phase (it would chain create/delete over real sandboxes);
#              the proxy route (fuzzed via execd.yaml instead).
#   execd:     the endless streams (/metrics/watch, /command/{id}/logs follow). The
#              routes that write, move or delete files run in a second pass, only under
#              runc (a bwrap sandbox sees the host's directories), with every path they
#              name moved below /tmp/fuzz of the sandbox (scripts/schemathesis_hooks.py).
#              The 1.1 `/v1/...` routes (isolated sessions, identity files) are left
#              out: their writes are the file routes' and they are tested by
#              server/tests/suite/isolated_runc.rs and the conformance areas isolated and
#              identity_files.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:?usage: schemathesis.sh SERVER_BIN}"
ST="${SCHEMATHESIS:-.work/venv/bin/schemathesis}"
EXAMPLES="${SCHEMA_EXAMPLES:-20}"
PER_SPEC="${SCHEMA_MAX_TIME:-30}"
LAYOUT="$PWD/.work/images/debian-python"
if [ -z "${OPEN_SANDBOX_DOMAIN:-}" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v runc >/dev/null && [ -f "$LAYOUT/index.json" ]; then
        # Registry references the fuzzer invents are pulled from a closed loopback port:
        # an immediate 400 IMAGE_PULL_FAILED instead of a wait on the network.
        export WITH_SERVER_RUNTIME=runc SCHEMA_IMAGE="oci:$LAYOUT:latest" \
            WITH_SERVER_ARGS="--registry-mirror 127.0.0.1:9"
    else
        echo "schema: no runc or no local image here: bubblewrap, and the file-writing routes are skipped"
        export WITH_SERVER_RUNTIME=bwrap SCHEMA_IMAGE=ubuntu
    fi
    exec timeout --signal=TERM --kill-after=5 "${SCHEMA_TIMEOUT:-150}" \
        scripts/with-server.sh "$BIN" "$0" "$BIN"
fi
H="OPEN-SANDBOX-API-KEY: $OPEN_SANDBOX_API_KEY"
BASE="http://$OPEN_SANDBOX_DOMAIN/v1"
CHECKS="${SCHEMA_CHECKS:-not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance}"
common=(--checks "$CHECKS" --max-examples "$EXAMPLES"
        --request-timeout 5 --phases examples,coverage,fuzzing --workers 1
        # One worker: hypothesis parses lambdas with `ast` and CPython 3.11 fails that across
        # threads now and then ("AST constructor recursion depth mismatch").
        --suppress-health-check all --no-color --generation-allow-x00 false)
# The sandbox whose execd is fuzzed, and execd before lifecycle: schemathesis reuses ids
# it reads from responses (GET /sandboxes) even outside the stateful phase, so the
# lifecycle run deletes every live sandbox it finds (a 204, as it should).
id=$(curl -fsS -X POST "$BASE/sandboxes" -H "$H" -H 'Content-Type: application/json' \
    -d '{"image":{"uri":"'"$SCHEMA_IMAGE"'"},"entrypoint":["tail","-f","/dev/null"],"resourceLimits":{"cpu":"1","memory":"512Mi"}}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
ep=$(curl -fsS "$BASE/sandboxes/$id/endpoints/44772" -H "$H")
url=$(python3 -c 'import json,sys; e=json.loads(sys.argv[1])["endpoint"]; print(e if "://" in e else "http://"+e)' "$ep")
tok=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get("headers",{}).get("X-EXECD-ACCESS-TOKEN",""))' "$ep")
for _ in $(seq 1 50); do curl -fsS "$url/ping" -H "X-EXECD-ACCESS-TOKEN: $tok" >/dev/null 2>&1 && break; sleep 0.1; done
rc=0
echo "schema: execd API of sandbox $id at $url"
WRITING='^/(files|directories)$|^/files/(mv|replace|permissions|upload)$'
"$ST" run openapi/execd.yaml --url "$url" -H "X-EXECD-ACCESS-TOKEN: $tok" "${common[@]}" \
    --max-time "$PER_SPEC" --exclude-path-regex "$WRITING|^/metrics/watch\$|/logs\$|^/v1/" \
    || rc=1
if [ "${WITH_SERVER_RUNTIME:-}" = runc ]; then
    echo "schema: execd file-writing routes, confined to /tmp/fuzz of sandbox $id"
    curl -fsS -X POST "$url/directories" -H "X-EXECD-ACCESS-TOKEN: $tok" -H 'Content-Type: application/json' \
        -d '{"/tmp/fuzz":{"mode":755}}' >/dev/null
    PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}" SCHEMATHESIS_HOOKS=schemathesis_hooks \
        "$ST" run openapi/execd.yaml --url "$url" -H "X-EXECD-ACCESS-TOKEN: $tok" \
        "${common[@]}" --max-time "${SCHEMA_WRITE_MAX_TIME:-20}" --include-path-regex "$WRITING" \
        || rc=1
fi
# The execd run means something only if it reached a live, intact sandbox the whole time.
curl -fsS "$url/ping" -H "X-EXECD-ACCESS-TOKEN: $tok" >/dev/null \
    || { echo "schema: sandbox $id no longer answers /ping"; rc=1; }
curl -fsS "$url/files/info?path=/usr/bin/env" -H "X-EXECD-ACCESS-TOKEN: $tok" >/dev/null \
    || { echo "schema: sandbox $id lost its files outside /tmp/fuzz"; rc=1; }
echo "schema: lifecycle API at $BASE"
"$ST" run openapi/lifecycle.yaml --url "$BASE" -H "$H" "${common[@]}" --max-time "$PER_SPEC" \
    --exclude-path-regex '/proxy/' || rc=1
exit "$rc"
