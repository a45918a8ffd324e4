#!/usr/bin/env bash
# The Python runner of `make bench` (scripts/bench/run.py): the same bench.py through the
# official package and through ours (both installed by prepare.sh), one JSON line each.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
WORK="$ROOT/.work/python-bench"
cd "$WORK"
for impl in official ours; do
    env -u PYTHONPATH BENCH_IMPL="$impl" "$WORK/$impl/bin/python" -I "$ROOT/bindings/python/bench/bench.py"
done
