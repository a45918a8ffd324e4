#!/usr/bin/env bash
# Packaging test (make test-go): a fresh module in OUT_DIR that imports the OFFICIAL
# path github.com/alibaba/OpenSandbox/sdks/sandbox/go, redirected to this module by a
# `replace` to the local path, builds the QUICKSTART.md program and runs it against a
# fresh server.   tests/packaging.sh SERVER_BIN OUT_DIR
set -euo pipefail
SERVER="${1:?server binary}"; OUT="${2:?out dir}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
rm -rf "$OUT"; mkdir -p "$OUT"
cat >"$OUT/go.mod" <<MOD
module quickstart

go 1.21

require github.com/alibaba/OpenSandbox/sdks/sandbox/go v1.0.2

replace github.com/alibaba/OpenSandbox/sdks/sandbox/go => $HERE
MOD
# The program is the ```go block of QUICKSTART.md, verbatim.
awk '/^```go$/{on=1; next} /^```$/{on=0} on' "$HERE/QUICKSTART.md" >"$OUT/main.go"
(cd "$OUT" && GOFLAGS=-mod=mod go build -o quickstart .)
out=$("$REPO/scripts/with-server.sh" "$SERVER" "$OUT/quickstart")
echo "quickstart printed: $out"
[ "$out" = "hello from Linux 0" ] || { echo "packaging test: FAILED (unexpected output)"; exit 1; }
echo "packaging test: passed"
