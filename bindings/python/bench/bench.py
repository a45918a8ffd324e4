"""One column of `make bench` (scripts/bench/run.py): times the shared workloads through
whichever `opensandbox` package this interpreter imports and prints one JSON line.
Uses only the public API that the official 1.1.1 and this package share.

Environment: OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY, the BENCH_* workload
(BENCH_STDOUT_CMD, BENCH_STDOUT_BYTES, BENCH_UPLOAD_FILE, BENCH_INFO_CALLS,
BENCH_RUN_CALLS) and BENCH_IMPL (the column's name).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any, Callable


def p50(fn: Callable[[], Any], n: int, warm: int) -> float:
    for _ in range(warm):
        fn()
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1000


def main() -> None:
    from opensandbox import SandboxSync
    from opensandbox.models.execd_sync import ExecutionHandlersSync

    info_calls = int(os.environ.get("BENCH_INFO_CALLS", "200"))
    run_calls = int(os.environ.get("BENCH_RUN_CALLS", "50"))
    stdout_cmd = os.environ["BENCH_STDOUT_CMD"]
    stdout_bytes = int(os.environ["BENCH_STDOUT_BYTES"])
    upload_file = os.environ["BENCH_UPLOAD_FILE"]
    size = os.path.getsize(upload_file)

    res: dict[str, Any] = {"lang": "python", "impl": os.environ.get("BENCH_IMPL", "ours")}
    sb = SandboxSync.create("python:3.11")
    try:
        sb.files.write_file("/tmp/bench/small.txt", "x")
        res["file_info_p50_ms"] = p50(lambda: sb.files.get_file_info(["/tmp/bench/small.txt"]), info_calls, 20)
        res["run_true_p50_ms"] = p50(lambda: sb.commands.run("true"), run_calls, 5)

        got = [0]

        def on_stdout(m: Any) -> None:
            got[0] += len(m.text) + 1

        t = time.perf_counter()
        sb.commands.run(stdout_cmd, handlers=ExecutionHandlersSync(on_stdout=on_stdout, skip_accumulation=True))
        dt = time.perf_counter() - t
        assert got[0] == stdout_bytes, (got[0], stdout_bytes)
        res["stdout_mb_s"] = stdout_bytes / 1e6 / dt

        # upload: a file object (streamed by both SDKs).
        with open(upload_file, "rb") as src:
            t = time.perf_counter()
            sb.files.write_file("/tmp/bench/big.bin", src)
            res["upload_mb_s"] = size / 1e6 / (time.perf_counter() - t)

        # download: the same file as a stream of chunks.
        t = time.perf_counter()
        n = 0
        for chunk in sb.files.read_bytes_stream("/tmp/bench/big.bin"):
            n += len(chunk)
        res["download_mb_s"] = size / 1e6 / (time.perf_counter() - t)
        assert n == size, (n, size)
    finally:
        sb.kill()
    print(json.dumps(res))


if __name__ == "__main__":
    main()
