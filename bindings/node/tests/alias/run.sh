#!/usr/bin/env bash
# The package installed under the official name: `npm pack`, then a scratch project that
# depends on "@alibaba-group/opensandbox": "file:<our tarball>" (npm's offline form of an
# alias: the dependency's name is the folder it lands in), installed --offline, then
# programs written against the official README run unchanged (ESM import and CJS
# require) against the server of $OPEN_SANDBOX_DOMAIN; with TSC (a tsc binary) and
# TYPE_ROOTS (where @types/node is) set, the README's TypeScript is type-checked against
# the installed package first, for import and require. Usage: run.sh WORK_DIR
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PKG="$(cd "$HERE/../.." && pwd)"
WORK="${1:?usage: run.sh WORK_DIR}"
rm -rf "$WORK" && mkdir -p "$WORK/pack" "$WORK/app"
(cd "$PKG" && npm pack --silent --pack-destination "$WORK/pack" >/dev/null)
TGZ="$(ls "$WORK"/pack/opensandbox-node-*.tgz)"
cat > "$WORK/app/package.json" <<JSON
{"name": "alias-app", "private": true, "type": "module",
 "dependencies": {"@alibaba-group/opensandbox": "file:$TGZ"}}
JSON
cp "$HERE/app.mjs" "$HERE/app.cjs" "$HERE/app.mts" "$HERE/app-cjs.cts" "$HERE/app-pool.mjs" "$HERE/app-pool.mts" "$WORK/app/"
cd "$WORK/app"
npm install --silent --offline --no-audit --no-fund
test "$(node -p 'require("@alibaba-group/opensandbox/package.json").name')" = opensandbox-node
if [ -n "${TSC:-}" ]; then
    "$TSC" --strict --noEmit --module nodenext --moduleResolution nodenext --target es2022 \
        --types node --typeRoots "${TYPE_ROOTS:?TYPE_ROOTS with TSC}" app.mts app-cjs.cts app-pool.mts
    echo "alias types: ok"
fi
node app.mjs
node app.cjs
node app-pool.mjs
