#!/usr/bin/env bash
# The .NET runner of `make bench` (scripts/bench/run.py): Bench.exe (compiled by
# `make bench-prepare-dotnet`) on Mono with the release C ABI library; our column only.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
LD_LIBRARY_PATH="$TARGET/release" exec mono "$ROOT/.work/dotnet/driver/Bench.exe"
