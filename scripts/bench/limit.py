"""The limit column of `make bench`: the same operations as every language's benchmark,
spoken as raw HTTP by curl to the same release server and sandbox route (the proxy),
so each package's figure can be read as a share of what the wire gives.

- small calls: one curl process, many URLs on one kept-alive connection, the time of
  each transfer from curl's own `time_total` (no process start in the figure);
- `run("true")`: `POST /command`, the event stream read to its end (the agent closes
  it right after the terminal event);
- stdout: the same command's event stream into /dev/null (curl parses nothing: this is
  the wire's rate, not a handler's);
- upload: `POST /files/upload` multipart from the shared upload file;
- download: `GET /files/download` into /dev/null.

Prints one JSON line: {"lang": "limit", "impl": "curl", ...figures}. Environment as
every runner's (scripts/bench/run.py): OPEN_SANDBOX_DOMAIN, OPEN_SANDBOX_API_KEY,
BENCH_*.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
import urllib.parse
import urllib.request
from typing import Dict, List, Tuple

DOMAIN = os.environ["OPEN_SANDBOX_DOMAIN"]
KEY = os.environ["OPEN_SANDBOX_API_KEY"]
BASE = DOMAIN if DOMAIN.startswith("http") else f"http://{DOMAIN}"


def lifecycle(method: str, path: str, body: object = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{BASE}/v1{path}", data=data, method=method)
    req.add_header("OPEN-SANDBOX-API-KEY", KEY)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=60) as r:
        raw = r.read()
    return json.loads(raw) if raw else None


def create_sandbox() -> str:
    sb = lifecycle("POST", "/sandboxes", {"image": {"uri": "python:3.11"}, "timeout": 600,
                                           "entrypoint": ["sleep", "infinity"]})
    sid = sb["id"]  # type: ignore[index]
    for _ in range(300):
        state = lifecycle("GET", f"/sandboxes/{sid}")["status"]["state"]  # type: ignore[index]
        if state == "Running":
            return sid
        time.sleep(0.05)
    raise SystemExit(f"limit: sandbox {sid} did not become Running")


def endpoint(sid: str) -> Tuple[str, Dict[str, str]]:
    ep = lifecycle("GET", f"/sandboxes/{sid}/endpoints/44772?use_server_proxy=true")
    url = ep["endpoint"]  # type: ignore[index]
    if not url.startswith("http"):
        url = f"http://{url}"
    return url.rstrip("/"), dict(ep.get("headers") or {})  # type: ignore[union-attr]


def curl(args: List[str], headers: Dict[str, str]) -> str:
    cmd = ["curl", "-sS", "--fail"]
    for k, v in headers.items():
        cmd += ["-H", f"{k}: {v}"]
    return subprocess.run(cmd + args, check=True, capture_output=True, text=True).stdout


def per_transfer_ms(args: List[str], url: str, n: int, headers: Dict[str, str]) -> List[float]:
    """`n` transfers of `url` on one connection; each one's time_total in ms."""
    pairs: List[str] = []
    for _ in range(n):
        pairs += [url, "-o", "/dev/null"]
    out = curl(args + ["-w", "%{time_total}\\n"] + pairs, headers)
    return [float(line) * 1000 for line in out.splitlines() if line.strip()]


def timed(args: List[str], headers: Dict[str, str]) -> Tuple[float, int]:
    """Seconds and bytes of one transfer (curl's own clock and count)."""
    out = curl(args + ["-o", "/dev/null", "-w", "%{time_total} %{size_download}"], headers)
    t, size = out.split()
    return float(t), int(size)


def main() -> None:
    info_calls = int(os.environ.get("BENCH_INFO_CALLS", "200"))
    run_calls = int(os.environ.get("BENCH_RUN_CALLS", "50"))
    stdout_cmd = os.environ["BENCH_STDOUT_CMD"]
    stdout_bytes = int(os.environ["BENCH_STDOUT_BYTES"])
    upload_file = os.environ["BENCH_UPLOAD_FILE"]
    size = os.path.getsize(upload_file)

    sid = create_sandbox()
    try:
        base, headers = endpoint(sid)
        curl(["-o", "/dev/null", "-X", "POST", "-F",
              'metadata={"path":"/tmp/bench/small.txt"};type=application/json;filename=metadata',
              "-F", "file=x;filename=small.txt", f"{base}/files/upload"], headers)
        info_url = f"{base}/files/info?path=" + urllib.parse.quote("/tmp/bench/small.txt", safe="")
        info = per_transfer_ms([], info_url, info_calls + 20, headers)[20:]
        run_args = ["-X", "POST", "-H", "Content-Type: application/json", "-d", json.dumps({"command": "true"})]
        runs = per_transfer_ms(run_args, f"{base}/command", run_calls + 5, headers)[5:]

        body = json.dumps({"command": stdout_cmd})
        t, got = timed(["-X", "POST", "-H", "Content-Type: application/json", "-d", body, f"{base}/command"], headers)
        # The stream carries the lines inside JSON frames: the rate is of the output
        # the command wrote (the same bytes every runner's handler counts).
        assert got > stdout_bytes, (got, stdout_bytes)
        stdout_mb_s = stdout_bytes / 1e6 / t

        meta = json.dumps({"path": "/tmp/bench/curl.bin", "mode": 644})
        t_up, _ = timed(["-X", "POST", "-F", f"metadata={meta};type=application/json;filename=metadata",
                         "-F", f"file=@{upload_file};type=application/octet-stream",
                         f"{base}/files/upload"], headers)
        dl = f"{base}/files/download?path=" + urllib.parse.quote("/tmp/bench/curl.bin", safe="")
        t_down, got = timed([dl], headers)
        assert got == size, (got, size)
    finally:
        try:
            lifecycle("DELETE", f"/sandboxes/{sid}")
        except Exception:  # noqa: BLE001 - the server's own cleanup removes it too
            pass
    print(json.dumps({
        "lang": "limit", "impl": "curl",
        "file_info_p50_ms": statistics.median(info),
        "run_true_p50_ms": statistics.median(runs),
        "stdout_mb_s": stdout_mb_s,
        "upload_mb_s": size / 1e6 / t_up,
        "download_mb_s": size / 1e6 / t_down,
    }))


if __name__ == "__main__":
    main()
