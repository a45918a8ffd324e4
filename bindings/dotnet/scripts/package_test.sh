#!/usr/bin/env bash
# Packaging test: consumes the .nupkg the way an application would, in a fresh directory,
# and runs the README quickstart (QUICKSTART.md) against the server of
# OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY (scripts/with-server.sh provides one).
#   scripts/package_test.sh NUPKG_DIR WORK_DIR
set -euo pipefail
NUPKG_DIR="$1"; WORK="$2"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
PKG=$(ls "$NUPKG_DIR"/Alibaba.OpenSandbox.*.nupkg | head -n1)
rm -rf "$WORK"; mkdir -p "$WORK/pkg" "$WORK/app"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$PKG" "$WORK/pkg"
for f in lib/net461/Alibaba.OpenSandbox.dll lib/net461/Alibaba.OpenSandbox.CodeInterpreter.dll \
         runtimes/linux-x64/native/libopensandbox_ffi.so Alibaba.OpenSandbox.nuspec; do
    [ -f "$WORK/pkg/$f" ] || { echo "package_test: $f missing from $PKG"; exit 1; }
done
# The quickstart is the C# block of QUICKSTART.md, verbatim.
python3 - "$HERE/QUICKSTART.md" "$WORK/app/Program.cs" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"```csharp\n(.*?)```", text, re.S)
if not m:
    sys.exit("package_test: no csharp block in QUICKSTART.md")
open(sys.argv[2], "w").write(m.group(1))
PY
# What NuGet does for a linux-x64 app: the assemblies and the RID's native asset beside it.
cp "$WORK/pkg/lib/net461/"*.dll "$WORK/pkg/runtimes/linux-x64/native/libopensandbox_ffi.so" "$WORK/app/"
mcs -langversion:7.2 -out:"$WORK/app/Quickstart.exe" -r:"$WORK/app/Alibaba.OpenSandbox.dll" "$WORK/app/Program.cs"
OUT=$(cd "$WORK/app" && env -u LD_LIBRARY_PATH timeout 120 mono Quickstart.exe)
echo "$OUT"
grep -qx "stdout: hello" <<<"$OUT" || { echo "package_test: quickstart output is wrong"; exit 1; }
grep -qx "exit code: 3" <<<"$OUT" || { echo "package_test: exit code line missing"; exit 1; }
grep -qx "Hello, sandbox!" <<<"$OUT" || { echo "package_test: file round trip missing"; exit 1; }
echo "package_test: 1 passed, 0 failed"
