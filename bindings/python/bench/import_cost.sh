#!/usr/bin/env bash
# What importing the package costs, ours against the official 1.1.1, in instructions
# (valgrind's callgrind): unlike milliseconds, the count does not move with the load of
# a shared machine. Uses the two virtualenvs bench/prepare.sh makes (`make
# bench-prepare-python`); prints one line per statement.
#   bindings/python/bench/import_cost.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
WORK="$ROOT/.work/python-bench"
command -v valgrind >/dev/null || { echo "import_cost: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
for impl in official ours; do
    [ -x "$WORK/$impl/bin/python" ] || { echo "import_cost: no $WORK/$impl (run make bench-prepare-python)" >&2; exit 2; }
done

instructions() {  # PYTHON CODE -> millions of instructions
    env -u PYTHONPATH valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" -I -c "$2" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | awk '{printf "%.0f", $1 / 1e6}'
}

base=$(instructions "$WORK/ours/bin/python" "pass")
printf '%-48s %12s %12s\n' "statement (M instructions, interpreter start ${base} M)" official ours
for code in "import opensandbox" "from opensandbox import Sandbox" "from opensandbox import SandboxSync"; do
    printf '%-48s %12s %12s\n' "$code" \
        "$(instructions "$WORK/official/bin/python" "$code")" "$(instructions "$WORK/ours/bin/python" "$code")"
done
