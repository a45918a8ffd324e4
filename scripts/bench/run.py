"""`make bench`: every language's benchmark against one release server, beside the
official package where one installs here and a raw-HTTP (curl) limit, in one table.

Run inside scripts/with-server.sh (OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY set):

    python3 scripts/bench/run.py [--repeat N] [--json FILE] LANG...

Each LANG's runner is `bindings/LANG/bench/bench.sh` (java: bindings/jvm); it runs the same workloads
(given here through BENCH_* variables, so no runner can drift) and prints one JSON line
per implementation it measured: {"lang", "impl", "file_info_p50_ms", "run_true_p50_ms",
"stdout_mb_s", "upload_mb_s", "download_mb_s"} (MB = 10^6 bytes). The limit is
scripts/bench/limit.py. Every runner runs N times, interleaved (so a noisy minute hits
every column alike); the table shows medians, the spread (min-max) is in the JSON file.

This is a benchmark, not a test: it prints figures and never fails on a slow one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[2]

# (key, label, unit, higher_is_better)
ROWS = [
    ("file_info_p50_ms", "files.get_file_info p50", "ms", False),
    ("run_true_p50_ms", 'commands.run("true") p50', "ms", False),
    ("stdout_mb_s", "stdout into a handler", "MB/s", True),
    ("upload_mb_s", "upload", "MB/s", True),
    ("download_mb_s", "download", "MB/s", True),
]

LINE = "a" * 99  # + "\n": 100-byte lines

# Languages whose package directory is not named after them.
PACKAGE_DIRS = {"java": "jvm"}


def workload(stdout_mb: int, transfer_mb: int, work: Path) -> Dict[str, str]:
    lines = stdout_mb * 1_000_000 // 100
    upload = work / "upload.bin"
    size = transfer_mb * 1024 * 1024
    if not upload.exists() or upload.stat().st_size != size:
        block = os.urandom(1024 * 1024)
        with open(upload, "wb") as f:
            for _ in range(transfer_mb):
                f.write(block)
    return {
        "BENCH_INFO_CALLS": os.environ.get("BENCH_INFO_CALLS", "200"),
        "BENCH_RUN_CALLS": os.environ.get("BENCH_RUN_CALLS", "50"),
        "BENCH_STDOUT_CMD": f"yes {LINE} | head -n {lines}",
        "BENCH_STDOUT_BYTES": str(lines * 100),
        "BENCH_UPLOAD_FILE": str(upload),
    }


def runner(lang: str) -> List[str]:
    if lang == "limit":
        return [sys.executable, str(ROOT / "scripts" / "bench" / "limit.py")]
    script = ROOT / "bindings" / PACKAGE_DIRS.get(lang, lang) / "bench" / "bench.sh"
    if not script.exists():
        raise SystemExit(f"bench: no runner for {lang} ({script})")
    return ["bash", str(script)]


def run_one(lang: str, env: Dict[str, str]) -> List[Dict[str, object]]:
    t = time.monotonic()
    p = subprocess.run(runner(lang), env=env, capture_output=True, text=True)
    took = time.monotonic() - t
    out = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    if p.returncode != 0 or not out:
        sys.stderr.write(f"bench: {lang} failed (exit {p.returncode}) after {took:.0f} s\n{p.stderr[-4000:]}\n")
    else:
        print(f"bench: {lang}: {len(out)} result(s) in {took:.0f} s", file=sys.stderr)
    return out


def column_name(r: Dict[str, object]) -> Tuple[str, str]:
    return str(r["lang"]), str(r["impl"])


def summarize(results: List[Dict[str, object]]) -> Dict[Tuple[str, str], Dict[str, Tuple[float, float, float]]]:
    """(lang, impl) -> key -> (median, min, max)."""
    grouped: Dict[Tuple[str, str], Dict[str, List[float]]] = {}
    for r in results:
        col = grouped.setdefault(column_name(r), {})
        for key, *_ in ROWS:
            v = r.get(key)
            if isinstance(v, (int, float)):
                col.setdefault(key, []).append(float(v))
    return {
        col: {k: (statistics.median(v), min(v), max(v)) for k, v in keys.items()}
        for col, keys in grouped.items()
    }


def cell(v: float, unit: str) -> str:
    return f"{v:.2f}" if unit == "ms" else f"{v:.0f}"


def versus(v: float, limit: float, unit: str) -> str:
    """Ours against the limit: +ms for times, % of the limit for rates."""
    if unit == "ms":
        return f"{v - limit:+.2f}"
    return f"{100 * v / limit:.0f}%"


def print_table(summary: Dict[Tuple[str, str], Dict[str, Tuple[float, float, float]]], langs: List[str], stdout_mb: int,
                transfer_mb: int, repeat: int) -> None:
    limit = summary.get(("limit", "curl"), {})
    cols = [c for lang in langs for c in sorted(summary) if c[0] == lang]
    # ours first within a language, then the others (official, stand-in)
    cols.sort(key=lambda c: (langs.index(c[0]), c[1] != "ours", c[1]))
    header = ["operation", "limit (curl)"] + [f"{lang} {impl}" for lang, impl in cols]
    body = []
    for key, label, unit, _higher in ROWS:
        name = label
        if key == "stdout_mb_s":
            name = f"{stdout_mb} MB stdout into a handler"
        elif key in ("upload_mb_s", "download_mb_s"):
            name = f"{transfer_mb} MiB {label}"
        lim = limit.get(key)
        row = [f"{name} ({unit})", cell(lim[0], unit) if lim else "-"]
        for col in cols:
            v = summary[col].get(key)
            if v is None:
                row.append("-")
            elif lim:
                row.append(f"{cell(v[0], unit)} ({versus(v[0], lim[0], unit)})")
            else:
                row.append(cell(v[0], unit))
        body.append(row)
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    print()
    print(f"make bench: medians of {repeat} run(s) per column, one release server, same sandbox route (proxy)")
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    for r in body:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print("(in brackets: times as ms over the limit, rates as % of the limit; "
          "'official' is the package from PyPI/npm, 'stand-in' a plain HTTP client written the official SDK's way)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("langs", nargs="+")
    ap.add_argument("--repeat", type=int, default=int(os.environ.get("BENCH_REPEAT", "3")))
    ap.add_argument("--json", default=str(ROOT / ".work" / "bench" / "results.json"))
    a = ap.parse_args()
    stdout_mb = int(os.environ.get("BENCH_STDOUT_MB", "100"))
    transfer_mb = int(os.environ.get("BENCH_TRANSFER_MB", "256"))
    work = Path(tempfile.gettempdir()) / "opensandbox-bench"
    work.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update(workload(stdout_mb, transfer_mb, work))
    env["BENCH_ROOT"] = str(ROOT)

    langs = ["limit"] + [x for x in a.langs if x != "limit"]
    results: List[Dict[str, object]] = []
    for i in range(a.repeat):
        print(f"bench: round {i + 1} of {a.repeat}", file=sys.stderr)
        for lang in langs:
            results.extend(run_one(lang, env))
    summary = summarize(results)
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    with open(a.json, "w") as f:
        json.dump({
            "results": results,
            "summary": {f"{c[0]}/{c[1]}": {k: {"median": m, "min": lo, "max": hi} for k, (m, lo, hi) in v.items()}
                        for c, v in summary.items()},
        }, f, indent=1)
    print_table(summary, langs, stdout_mb, transfer_mb, a.repeat)
    print(f"(every run and the spread: {a.json})")


if __name__ == "__main__":
    main()
