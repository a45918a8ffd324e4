#!/usr/bin/env bash
# The official tools on our package: builds our two wheels (opensandbox,
# opensandbox-code-interpreter), installs them into a scratch virtualenv, then
# opensandbox-cli and opensandbox-mcp 1.1.1 from PyPI with a constraint file that pins
# both of our distributions to our wheels (a real resolve that must keep ours), and
# drives them against a fresh reference server (scripts/with-server.sh).
#   bindings/python/scripts/official_tools.sh SERVER_BIN PYTHON_WITH_MATURIN [WHEEL_DIR]
# With WHEEL_DIR (make test-python passes the packaging test's) the wheels there are
# used instead of building them again; a run then takes ~15 s once the venv exists.
# Also drives osb template and osb credential-vault (the 1.1 routes).
set -euo pipefail
SERVER="$(realpath "${1:?usage: official_tools.sh SERVER_BIN PYTHON}")"
PY="${2:?usage: official_tools.sh SERVER_BIN PYTHON}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
WORK="$ROOT/.work/python-official-tools"
WHEELS="${3:-}"
mkdir -p "$WORK"
if [ -z "$WHEELS" ]; then
    WHEELS="$WORK/wheels"; rm -rf "$WHEELS"; mkdir -p "$WHEELS"
    echo "official-tools: building our wheels"
    "$(dirname "$PY")/maturin" build --quiet --profile dev -m "$ROOT/bindings/python/Cargo.toml" --out "$WHEELS"
    "$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$WHEELS" "$ROOT/bindings/python/code-interpreter"
fi
OSB_WHL="$(realpath "$(ls "$WHEELS"/opensandbox-1.1.1-*.whl)")"
CI_WHL="$(realpath "$(ls "$WHEELS"/opensandbox_code_interpreter-1.1.1-*.whl)")"
printf 'opensandbox @ file://%s\nopensandbox-code-interpreter @ file://%s\n' "$OSB_WHL" "$CI_WHL" >"$WORK/constraints.txt"

# The venv (and pip's own cache) is kept between runs: only our wheels are reinstalled.
V="$WORK/venv"
test -x "$V/bin/python" || "$PY" -m venv "$V"
PIP=("$V/bin/pip" install -q --disable-pip-version-check)
"${PIP[@]}" --force-reinstall --no-deps "$OSB_WHL" "$CI_WHL"
"${PIP[@]}" -c "$WORK/constraints.txt" "$OSB_WHL" "$CI_WHL" \
    "opensandbox-cli==1.1.1" "opensandbox-mcp==1.1.1" "opensandbox-code-interpreter==1.1.1" "mcp>=2,<3"
"$V/bin/python" - <<'PYEOF'
import importlib.metadata as md
import code_interpreter, opensandbox._native  # noqa: F401 - ours: the native module is there
for dist in ("opensandbox", "opensandbox-code-interpreter"):
    files = [str(f) for f in (md.distribution(dist).files or [])]
    assert any("direct_url.json" in f for f in files), f"{dist} is not our wheel"
print("official-tools: pip kept our opensandbox", md.version("opensandbox"), "and code interpreter")
PYEOF

cp "$ROOT/bindings/python/scripts/official_tools_drive.py" "$WORK/drive.py"
cd "$WORK"
# The official tools against the 1.1 execd framing (line endings kept), as they meet it.
WITH_SERVER_FRAMING=kept "$ROOT/scripts/with-server.sh" "$SERVER" env -u PYTHONPATH PATH="$V/bin:$PATH" "$V/bin/python" -I drive.py
