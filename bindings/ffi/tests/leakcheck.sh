#!/usr/bin/env bash
# Leak check of the C ABI (run by `make test-ffi`): builds tests/leakcheck.c with gcc
# against the header and the static library, runs its create/run/pulled-run/cancel/
# upload/download/metrics/error/kill loop (one op-layer session and runtime per
# iteration) under valgrind against a fresh server, twice (3 and 9 iterations). Fails on
# any definite/indirect leak or memory error. (Bytes still reachable at exit are printed
# for information only: process-wide statics of the libraries, such as TLS roots, and
# vary from run to run.)
#   bindings/ffi/tests/leakcheck.sh SERVER_BIN FFI_STATIC_LIB OUT_DIR
set -euo pipefail
SERVER="${1:?server binary}"; LIB="${2:?libopensandbox_ffi.a}"; OUT="${3:?out dir}"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
mkdir -p "$OUT"
gcc -std=c99 -Wall -Wextra -Werror -g -O1 -D_POSIX_C_SOURCE=200809L \
    -I"$HERE/../include" "$HERE/leakcheck.c" "$LIB" -lpthread -ldl -lm -o "$OUT/leakcheck"
in_use() { sed -n 's/.*in use at exit: \([0-9,]*\) bytes.*/\1/p' "$1" | tr -d ,; }
for n in 3 9; do
    log="$OUT/valgrind-$n.log"
    if ! "$REPO/scripts/with-server.sh" "$SERVER" valgrind --leak-check=full \
        --errors-for-leak-kinds=definite,indirect --error-exitcode=1 --num-callers=30 \
        "$OUT/leakcheck" "$n" >"$log" 2>&1; then
        cat "$log"; echo "leak check: FAILED ($n iterations)"; exit 1
    fi
    grep -E "definitely lost|indirectly lost|in use at exit|ERROR SUMMARY" "$log" | sed "s/^==[0-9]*==/  [$n iterations]/"
done
a=$(in_use "$OUT/valgrind-3.log"); b=$(in_use "$OUT/valgrind-9.log")
echo "leak check: passed (valgrind: 0 bytes definitely/indirectly lost, 0 errors; still reachable at exit: $a bytes after 3 iterations, $b after 9)"
