#!/usr/bin/env bash
# Runs the parts of `make test` one after another, each as its own `make PART`, and
# prints how long each took, so a slow part shows up in every CI log:
#   scripts/run-parts.sh PART [PART...]
# Every part runs even when an earlier one failed (one run shows every failure); the
# exit status is non-zero when any part failed. The timing table goes to stderr, the
# closing line of the last part (the conformance matrix's "N passed, N failed") stays
# the last line on stdout.
set -uo pipefail
MAKE="${MAKE:-make}"
declare -a names=() secs=() codes=()
start_all=$(date +%s)
for part in "$@"; do
    echo "==> make $part ($(date -u +%H:%M:%S))" >&2
    t0=$(date +%s)
    timeout --signal=TERM --kill-after=30 "${PART_TIMEOUT:-1800}" \
        "$MAKE" --no-print-directory "$part"
    rc=$?
    [ "$rc" -ne 124 ] || echo "==> make $part TIMED OUT after ${PART_TIMEOUT:-1800} s" >&2
    names+=("$part"); secs+=($(( $(date +%s) - t0 ))); codes+=("$rc")
    [ "$rc" -eq 0 ] || echo "==> make $part FAILED (exit $rc)" >&2
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
