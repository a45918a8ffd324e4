"""Command start against its floor: where `run("true")`'s time goes.

    python3 scripts/bench/cmdstart.py [--server BIN] [--runtime bwrap,runc] [-n 300]

Starts its own server (release build by default: target/release/opensandbox-server,
or $CARGO_TARGET_DIR/release/...), and per runtime creates one sandbox and prints the
p50 / p95 (ms) of:

- proxy: `POST /command {"command":"true"}` through the server proxy, the event stream
  read to its end, many transfers on one kept-alive connection, each one's time from
  curl's own `time_total` (as scripts/bench/limit.py, the `make bench` curl column);
- agent: the same request straight to the agent's Unix socket (curl --unix-socket),
  i.e. without the proxy hop;
- proxy spaced: the proxy request again, one every `--gap-ms` (20) ms on one kept-alive
  connection (Python sockets): a sandbox that is not driven back to back, where the
  ready shell for the next command has finished starting before it comes;
- fork+exec: fork + execve("/bin/true") + waitpid in the sandbox, timed in the
  sandbox by scripts/bench/forkexec.c (built static here with gcc, uploaded, run once
  with N rounds); `posix_spawn` the same with posix_spawn (vfork-like);
- host fork+exec: the same program on the host, outside any sandbox.

Runtimes: `bwrap` (what scripts/with-server.sh uses) and `runc` (the image
`oci:.work/images/debian-python:latest`, skipped when runc or the image is missing).
`--spin` keeps both CPUs busy with two `nice 19` busy loops while measuring: on a VM
whose idle vCPUs halt (cpuidle haltpoll), every sleep/wake handoff of an idle vCPU
costs a host round trip, which is most of a spaced command's time on an idle machine
(see "Command start" in docs/architecture.md).
The rounds of the measurements are interleaved in blocks, so a noisy minute of a
shared machine hits each alike. A benchmark, not a test: it prints figures, never fails
on a slow one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def pct(values: List[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


class Server:
    def __init__(self, binary: str, runtime: str, data: Path) -> None:
        self.key = f"cmdstart-{os.getpid()}"
        self.data = data
        out = open(data / "server.out", "w")
        log = open(data / "server.log", "w")
        args = [binary, "--listen", "127.0.0.1:0", "--api-key", self.key, "--data-dir", str(data),
                "--runtime", runtime]
        self.proc = subprocess.Popen(args, stdout=out, stderr=log)
        self.addr = ""
        for _ in range(200):
            text = (data / "server.out").read_text()
            for line in text.splitlines():
                if line.startswith("opensandbox-server listening on "):
                    self.addr = line.split()[-1]
            if self.addr:
                break
            if self.proc.poll() is not None:
                raise SystemExit((data / "server.log").read_text())
            time.sleep(0.05)
        if not self.addr:
            raise SystemExit("server did not start")

    def call(self, method: str, path: str, body: object = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://{self.addr}/v1{path}", data=data, method=method)
        req.add_header("OPEN-SANDBOX-API-KEY", self.key)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=120) as r:
            raw = r.read()
        return json.loads(raw) if raw else None

    def create(self, image: str) -> str:
        sb = self.call("POST", "/sandboxes", {"image": {"uri": image}, "timeout": 900,
                                              "entrypoint": ["sleep", "infinity"]})
        sid = sb["id"]  # type: ignore[index]
        for _ in range(1200):
            state = self.call("GET", f"/sandboxes/{sid}")["status"]["state"]  # type: ignore[index]
            if state == "Running":
                return sid
            if state in ("Failed", "Terminated"):
                raise RuntimeError(f"sandbox {sid} is {state}")
            time.sleep(0.05)
        raise RuntimeError(f"sandbox {sid} did not become Running")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def curl(args: List[str], headers: Dict[str, str]) -> str:
    cmd = ["curl", "-sS", "--fail"]
    for k, v in headers.items():
        cmd += ["-H", f"{k}: {v}"]
    return subprocess.run(cmd + args, check=True, capture_output=True, text=True).stdout


def per_transfer_ms(args: List[str], url: str, n: int, headers: Dict[str, str]) -> List[float]:
    pairs: List[str] = []
    for _ in range(n):
        pairs += [url, "-o", "/dev/null"]
    out = curl(args + ["-w", "%{time_total}\\n"] + pairs, headers)
    return [float(line) * 1000 for line in out.splitlines() if line.strip()]


RUN_TRUE = ["-X", "POST", "-H", "Content-Type: application/json", "-d", json.dumps({"command": "true"})]


def spaced_ms(base: str, headers: Dict[str, str], n: int, gap_ms: float) -> List[float]:
    """`n` proxy `run("true")`s `gap_ms` apart on one kept-alive connection, each
    timed from the request's send to the end of its (chunked) event stream."""
    url = urllib.parse.urlsplit(base)
    body = json.dumps({"command": "true"}).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    req = (f"POST {url.path}/command HTTP/1.1\r\nHost: {url.netloc}\r\n{head}"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    sock = socket.create_connection((url.hostname, url.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    out: List[float] = []
    try:
        for _ in range(n):
            time.sleep(gap_ms / 1000)
            start = time.perf_counter()
            sock.sendall(req)
            got = b""
            while not got.endswith(b"\r\n0\r\n\r\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    raise RuntimeError("the server closed the connection")
                got += chunk
            out.append((time.perf_counter() - start) * 1000)
    finally:
        sock.close()
    return out


def command_output(base: str, headers: Dict[str, str], argv: List[str], unix: Optional[str]) -> str:
    """stdout of `argv` run in the sandbox (foreground), from its event stream."""
    body = json.dumps({"argv": argv})
    extra = ["--unix-socket", unix] if unix else []
    raw = curl(extra + ["-X", "POST", "-H", "Content-Type: application/json", "-d", body,
                        f"{base}/command"], headers)
    text = []
    for chunk in raw.split("\n\n"):
        chunk = chunk.strip()
        if chunk.startswith("data:"):
            chunk = chunk[5:].strip()
        if not chunk:
            continue
        event = json.loads(chunk)
        if event.get("type") == "stdout":
            text.append(event.get("text", ""))
        if event.get("type") == "error":
            raise RuntimeError(f"{argv} failed: {event}")
    joined = "".join(text)
    return joined if "\n" in joined else "\n".join(text)


def forkexec_binary(work: Path) -> Path:
    out = work / "forkexec"
    subprocess.run(["gcc", "-O2", "-static", "-o", str(out), str(HERE / "forkexec.c")], check=True)
    return out


def bench_runtime(binary: str, runtime: str, image: str, rounds: int, fx: Path,
                  gap_ms: float) -> Dict[str, List[float]]:
    data = Path(tempfile.mkdtemp(prefix=f"cmdstart-{runtime}-"))
    server = Server(binary, runtime, data)
    try:
        sid = server.create(image)
        ep = server.call("GET", f"/sandboxes/{sid}/endpoints/44772?use_server_proxy=true")
        url = ep["endpoint"]  # type: ignore[index]
        base = (url if url.startswith("http") else f"http://{url}").rstrip("/")
        headers = dict(ep.get("headers") or {})  # type: ignore[union-attr]
        sockets = [p for p in data.rglob("execd.sock") if sid in str(p)]
        agent_sock = str(sockets[0]) if sockets else None

        meta = json.dumps({"path": "/tmp/forkexec", "mode": 755})
        curl(["-o", "/dev/null", "-X", "POST", "-F", f"metadata={meta};type=application/json;filename=metadata",
              "-F", f"file=@{fx};type=application/octet-stream", f"{base}/files/upload"], headers)

        got: Dict[str, List[float]] = {"proxy": [], "agent": [], "proxy spaced": [], "fork+exec": [],
                                       "posix_spawn": [], "host fork+exec": []}
        block = 50
        for start in range(0, rounds, block):
            n = min(block, rounds - start)
            got["proxy"] += per_transfer_ms(RUN_TRUE, f"{base}/command", n + 3, headers)[3:]
            if agent_sock:
                got["agent"] += per_transfer_ms(RUN_TRUE + ["--unix-socket", agent_sock],
                                                "http://sandbox/command", n + 3, {})[3:]
            got["proxy spaced"] += spaced_ms(base, headers, n + 3, gap_ms)[3:]
            for key, mode in (("fork+exec", []), ("posix_spawn", ["spawn"])):
                out = command_output(base, headers, ["/tmp/forkexec", str(n + 3)] + mode, None)
                got[key] += [float(x) / 1000 for x in out.split()][3:]
            host = subprocess.run([str(fx), str(n + 3)], check=True, capture_output=True, text=True).stdout
            got["host fork+exec"] += [float(x) / 1000 for x in host.split()][3:]
        try:
            server.call("DELETE", f"/sandboxes/{sid}")
        except Exception:  # noqa: BLE001 - the server stop removes it too
            pass
        return {k: v for k, v in got.items() if v}
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


def main() -> None:
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default=str(target / "release" / "opensandbox-server"))
    ap.add_argument("--runtime", default="bwrap,runc")
    ap.add_argument("-n", "--rounds", type=int, default=300)
    ap.add_argument("--image", default=str(next((p for p in (ROOT / ".work" / "images" / "debian-python", ROOT / ".work-main" / "images" / "debian-python") if p.is_dir()), ROOT / ".work" / "images" / "debian-python")),
                    help="OCI layout directory for runc (default .work/images/debian-python)")
    ap.add_argument("--gap-ms", type=float, default=20.0, help="spacing of the `proxy spaced` requests")
    ap.add_argument("--spin", action="store_true", help="keep both CPUs busy (two nice-19 loops) meanwhile")
    ap.add_argument("--json", help="also write every sample here")
    args = ap.parse_args()
    spinners = []
    if args.spin:
        spinners = [subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"])
                    for _ in range(os.cpu_count() or 2)]

    work = Path(tempfile.mkdtemp(prefix="cmdstart-"))
    fx = forkexec_binary(work)
    results: Dict[str, Dict[str, List[float]]] = {}
    for runtime in args.runtime.split(","):
        if runtime == "bwrap":
            image = "python:3.11"
        else:
            if not shutil.which(runtime) or not Path(args.image).is_dir():
                print(f"{runtime}: skipped (no {runtime} or no image {args.image})", file=sys.stderr)
                continue
            image = f"oci:{args.image}:latest"
        try:
            results[runtime] = bench_runtime(args.server, runtime, image, args.rounds, fx, args.gap_ms)
        except Exception as err:  # noqa: BLE001 - one runtime failing leaves the others
            print(f"{runtime}: failed: {err}", file=sys.stderr)
    for spinner in spinners:
        spinner.kill()
        spinner.wait()
    shutil.rmtree(work, ignore_errors=True)

    print(f"server {args.server}, {args.rounds} rounds, load average {os.getloadavg()[0]:.2f}"
          + (", CPUs kept busy (--spin)" if args.spin else ""))
    print(f"{'runtime':8} {'measure':16} {'p50 ms':>8} {'p95 ms':>8}")
    for runtime, got in results.items():
        for key, values in got.items():
            print(f"{runtime:8} {key:16} {statistics.median(values):8.2f} {pct(values, 0.95):8.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
