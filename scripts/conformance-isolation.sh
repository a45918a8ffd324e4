#!/usr/bin/env bash
# Prints the isolation `make conformance` runs the matrix under, and why on stderr:
#   runc   root, runc, docker-registry and the local image (scripts/build-image.sh)
#          are all here: the cases' images run under runc, pulled from a loopback
#          registry (conformance/harness.py --isolation runc);
#   bwrap  else, when bubblewrap can create namespaces here (host's directories);
#   none   else (cases that need isolation are skipped and counted as such).
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
why=""
if [ "$(id -u)" -ne 0 ]; then why="not root"
elif ! command -v runc >/dev/null 2>&1 && [ ! -x /usr/sbin/runc ]; then why="runc is not installed"
elif ! command -v docker-registry >/dev/null 2>&1; then why="docker-registry is not installed"
elif [ ! -f "$ROOT/.work/images/debian-python/index.json" ]; then why="no local image (scripts/build-image.sh)"
fi
if [ -z "$why" ]; then
    echo "conformance: isolation runc (images from a loopback registry)" >&2
    echo runc
    exit 0
fi
if bwrap --unshare-user --unshare-pid --unshare-net --uid 0 --gid 0 --ro-bind / / --proc /proc -- true >/dev/null 2>&1; then
    echo "conformance: isolation bwrap, not runc: $why" >&2
    echo bwrap
else
    echo "conformance: isolation none, not runc ($why) nor bwrap (cannot create namespaces here)" >&2
    echo none
fi
