#!/usr/bin/env bash
# A registry on loopback for the runc backend's tests, the conformance matrix and the
# demo, where Docker Hub is out of reach: Debian's docker-registry, fed by the server's
# own push code (`opensandbox-server images push`).
#
#   scripts/local-registry.sh start DIR [SERVER_BIN]   prints HOST:PORT
#   scripts/local-registry.sh stop DIR
#
# `start` runs docker-registry on 127.0.0.1:<free port> with its storage in DIR/data,
# and pushes the local image (.work/images/debian-python, built by
# scripts/build-image.sh) under every name in $REGISTRY_IMAGES (default: the names the
# conformance cases and quickstarts use). Then `--registry-mirror HOST:PORT` makes the
# server pull `python:3.11` from there.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CMD="${1:?usage: local-registry.sh start|stop DIR [SERVER_BIN]}"
DIR="${2:?usage: local-registry.sh start|stop DIR [SERVER_BIN]}"
BIN="${3:-$ROOT/target/debug/opensandbox-server}"
LAYOUT="${REGISTRY_LAYOUT:-$ROOT/.work/images/debian-python:latest}"
IMAGES="${REGISTRY_IMAGES:-library/python:3.11 opensandbox/code-interpreter:latest library/ubuntu:latest}"

case "$CMD" in
stop)
    if [ -f "$DIR/registry.pid" ]; then
        kill "$(cat "$DIR/registry.pid")" 2>/dev/null || true
        rm -f "$DIR/registry.pid"
    fi
    exit 0
    ;;
start) ;;
*) echo "local-registry: unknown command $CMD" >&2; exit 2 ;;
esac

command -v docker-registry >/dev/null 2>&1 || { echo "local-registry: docker-registry is missing (apt-get install docker-registry)" >&2; exit 1; }
mkdir -p "$DIR/data"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cat >"$DIR/config.yml" <<YAML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $DIR/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$PORT
YAML
docker-registry serve "$DIR/config.yml" >"$DIR/registry.log" 2>&1 &
echo $! >"$DIR/registry.pid"
for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$PORT/v2/" >/dev/null 2>&1 && break
    kill -0 "$(cat "$DIR/registry.pid")" 2>/dev/null || { cat "$DIR/registry.log" >&2; exit 1; }
    sleep 0.1
done
for name in $IMAGES; do
    "$BIN" images push "oci:$LAYOUT" "127.0.0.1:$PORT/$name" >&2
done
echo "127.0.0.1:$PORT"
