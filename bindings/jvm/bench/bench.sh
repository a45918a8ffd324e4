#!/usr/bin/env bash
# The JVM runner of `make bench` (scripts/bench/run.py): Bench.java (compiled by
# `make bench-prepare-java`) on the release JNI library, printing the stand-in's and
# our column.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
exec java -Dopensandbox.native.library="$TARGET/release/libopensandbox_jvm.so" \
    -cp "$ROOT/bindings/jvm/java/target/classes:$ROOT/.work/jvm/bench" Bench
