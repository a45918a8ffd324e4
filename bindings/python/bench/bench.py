"""One side of `make bench-python`: times the same operations through whichever
`opensandbox` package this interpreter imports, prints one JSON line of figures.
Uses only the public API that the official 1.1.1 and this package share.

    python bench.py            (OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY set)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MB = 1024 * 1024
STDOUT_MB = int(os.environ.get("BENCH_STDOUT_MB", "100"))
TRANSFER_MB = int(os.environ.get("BENCH_TRANSFER_MB", "256"))


def import_time() -> float:
    runs = []
    for _ in range(5):
        out = subprocess.check_output(
            [
                sys.executable,
                "-c",
                "import time; t=time.perf_counter(); import opensandbox; print(time.perf_counter()-t)",
            ]
        )
        runs.append(float(out))
    return statistics.median(runs) * 1000


def p50(fn, n: int) -> float:
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

    res = {"import_ms": import_time()}
    sb = SandboxSync.create("python:3.11")
    try:
        sb.files.write_file("/bench/small.txt", "x")
        res["file_info_p50_ms"] = p50(lambda: sb.files.get_file_info(["/bench/small.txt"]), 200)
        res["run_true_p50_ms"] = p50(lambda: sb.commands.run("true"), 50)

        # stdout: STDOUT_MB of 100-byte lines into a handler that counts bytes.
        got = [0]

        def on_stdout(m):
            got[0] += len(m.text) + 1

        lines = STDOUT_MB * MB // 100
        cmd = f"yes {'a' * 99} | head -n {lines}"
        t = time.perf_counter()
        sb.commands.run(cmd, handlers=ExecutionHandlersSync(on_stdout=on_stdout, skip_accumulation=True))
        dt = time.perf_counter() - t
        assert got[0] == lines * 100, (got[0], lines * 100)
        res["stdout_mb_s"] = STDOUT_MB / dt

        # upload: a TRANSFER_MB file object (streamed by both SDKs).
        with tempfile.NamedTemporaryFile() as f:
            block = os.urandom(MB)
            for _ in range(TRANSFER_MB):
                f.write(block)
            f.flush()
            with open(f.name, "rb") as src:
                t = time.perf_counter()
                sb.files.write_file("/bench/big.bin", src)
                res["upload_mb_s"] = TRANSFER_MB / (time.perf_counter() - t)

        # download: the same file as a stream of chunks.
        t = time.perf_counter()
        size = 0
        for chunk in sb.files.read_bytes_stream("/bench/big.bin"):
            size += len(chunk)
        res["download_mb_s"] = TRANSFER_MB / (time.perf_counter() - t)
        assert size == TRANSFER_MB * MB, size
    finally:
        sb.kill()
    print(json.dumps(res))


if __name__ == "__main__":
    main()
