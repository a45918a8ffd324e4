#!/usr/bin/env bash
# The Node runner of `make bench` (scripts/bench/run.py): bench.mjs through the official
# package and through ours (release addon), one process and one JSON line each.
# `make bench-prepare-node` installs the official package and copies the addon.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
WORK="$ROOT/.work/node/bench"
export BENCH_DIR="$WORK" OPENSANDBOX_NODE_ADDON="$WORK/opensandbox.node"
for impl in official ours; do
    node "$ROOT/bindings/node/bench/bench.mjs" "$impl"
done
