#!/usr/bin/env bash
# Runs the parts of `make test` one after another, each as its own `make PART`, and
# prints how long each took, so a slow part shows up in every CI log:
#   scripts/run-parts.sh PART [PART...]
# A part written `A+B` runs the parts A and B at the same time (for parts that mostly
# wait, on resources they do not share); their outputs are printed one after the
# other when both have ended, each under its own heading.
# Every part runs even when an earlier one failed (one run shows every failure); the
# exit status is non-zero when any part failed. The timing table goes to stderr, the
# closing line of the last part (the conformance matrix's "N passed, N failed") stays
# the last line on stdout.
set -uo pipefail
MAKE="${MAKE:-make}"
declare -a names=() secs=() codes=()
start_all=$(date +%s)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

run_one() {  # PART: runs it under the part timeout; returns its exit status
    timeout --signal=TERM --kill-after=30 "${PART_TIMEOUT:-1800}" \
        "$MAKE" --no-print-directory "$1"
    local rc=$?
    [ "$rc" -ne 124 ] || echo "==> make $1 TIMED OUT after ${PART_TIMEOUT:-1800} s" >&2
    return "$rc"
}

record() {  # PART SECONDS STATUS
    names+=("$1"); secs+=("$2"); codes+=("$3")
    [ "$3" -eq 0 ] || echo "==> make $1 FAILED (exit $3)" >&2
}

for part in "$@"; do
    if [[ "$part" != *+* ]]; then
        echo "==> make $part ($(date -u +%H:%M:%S))" >&2
        t0=$(date +%s)
        run_one "$part"
        rc=$?
        record "$part" $(( $(date +%s) - t0 )) "$rc"
        continue
    fi
    IFS=+ read -r -a group <<<"$part"
    echo "==> make ${group[*]} at the same time ($(date -u +%H:%M:%S))" >&2
    declare -a pids=()
    for p in "${group[@]}"; do
        ( t0=$(date +%s); run_one "$p" >"$logs/$p.out" 2>&1; rc=$?
          echo "$(( $(date +%s) - t0 )) $rc" >"$logs/$p.status" ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    for p in "${group[@]}"; do
        echo "==> output of make $p" >&2
        cat "$logs/$p.out"
        read -r s rc <"$logs/$p.status" 2>/dev/null || { s=0; rc=1; }
        record "$p" "$s" "$rc"
    done
    unset pids
done
total=$(( $(date +%s) - start_all ))
failed=0
{
    echo "==> time per part"
    for i in "${!names[@]}"; do
        status=ok; [ "${codes[$i]}" -eq 0 ] || { status=FAILED; failed=1; }
        printf '    %-22s %5d s  %s\n' "${names[$i]}" "${secs[$i]}" "$status"
    done
    printf '    %-22s %5d s\n' total "$total"
} >&2
exit "$failed"
