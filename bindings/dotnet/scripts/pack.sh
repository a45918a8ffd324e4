#!/usr/bin/env bash
# Packs the .nupkg: scripts/pack.sh LIB_DIR LIBOPENSANDBOX_FFI_SO VERSION OUT_DIR
# The native library is copied without its debug sections (the debug build is ~100 MB).
set -euo pipefail
LIB="$1"; SO="$2"; VERSION="$3"; OUT="$4"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
STAGE="$OUT/stage"
rm -rf "$OUT"; mkdir -p "$STAGE/lib" "$STAGE/native"
cp "$LIB/Alibaba.OpenSandbox.dll" "$LIB/Alibaba.OpenSandbox.CodeInterpreter.dll" "$STAGE/lib/"
objcopy --strip-debug "$SO" "$STAGE/native/libopensandbox_ffi.so"
cp "$HERE/README.md" "$STAGE/README.md"
nuget pack "$HERE/Alibaba.OpenSandbox.nuspec" -BasePath "$STAGE" -OutputDirectory "$OUT" \
    -Version "$VERSION" -NoPackageAnalysis -NonInteractive >/dev/null
ls "$OUT"/Alibaba.OpenSandbox."$VERSION".nupkg
