#!/usr/bin/env bash
# The Go runner of `make bench` (scripts/bench/run.py): the bench binary built by
# `make bench-prepare-go` (release library), printing the stand-in's and our column.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
exec "$ROOT/.work/go/bin/opensandbox-go-bench"
