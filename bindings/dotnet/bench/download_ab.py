"""A/B of .NET downloads: curl, then builds A and B of the assembly alternating, on one
sandbox and one 256 MiB file, ROUNDS rounds of PER downloads per process; medians.

Build DownloadAB.exe next to each Alibaba.OpenSandbox.dll (dirs in $A and $B), e.g.
  mcs -langversion:7.2 -optimize+ -target:exe -out:$A/DownloadAB.exe \
      -r:$A/Alibaba.OpenSandbox.dll bindings/dotnet/bench/DownloadAB.cs
then run under a release server (the release C ABI library is used, or $NATIVE_A and
$NATIVE_B: directories of two builds of libopensandbox_ffi.so):
  ROOT=$PWD A=... B=... scripts/with-server.sh target/release/opensandbox-server \
      python3 bindings/dotnet/bench/download_ab.py
"""
import json, os, statistics, subprocess, sys, urllib.parse
sys.path.insert(0, os.environ["ROOT"] + "/scripts/bench")
import limit  # noqa: E402

DIRS = {"old": os.environ["A"], "new": os.environ["B"]}
ROUNDS = int(os.environ.get("ROUNDS", "5"))
PER = int(os.environ.get("PER", "2"))
SIZE = 256 * 1024 * 1024
f = os.environ.get("BLOB", "/tmp/download_ab.bin")
if not os.path.exists(f) or os.path.getsize(f) != SIZE:
    with open(f, "wb") as o:
        o.write(os.urandom(SIZE))
sid = limit.create_sandbox()
# The C ABI library each side loads: $NATIVE_A / $NATIVE_B (directories holding
# libopensandbox_ffi.so, to compare two builds of the library with one assembly), else
# the release build.
release = os.environ["ROOT"] + "/target/release"
envs = {w: dict(os.environ, LD_LIBRARY_PATH=os.environ.get(k, release)) for w, k in (("old", "NATIVE_A"), ("new", "NATIVE_B"))}
res = {"curl": [], "old": [], "new": [], "old_first": [], "new_first": [], "old_cpu": [], "new_cpu": [], "old_flt": [], "new_flt": []}
try:
    base, headers = limit.endpoint(sid)
    meta = json.dumps({"path": "/tmp/ab.bin", "mode": 644})
    limit.timed(["-X", "POST", "-F", f"metadata={meta};type=application/json;filename=metadata",
                 "-F", f"file=@{f};type=application/octet-stream", f"{base}/files/upload"], headers)
    dl = f"{base}/files/download?path=" + urllib.parse.quote("/tmp/ab.bin", safe="")
    for r in range(ROUNDS):
        order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
        for which in order:
            t, got = limit.timed([dl], headers)
            assert got == SIZE
            res["curl"].append(SIZE / 1e6 / t)
            out = subprocess.run(["mono", os.path.join(DIRS[which], "DownloadAB.exe"), sid, "/tmp/ab.bin", str(SIZE), str(PER)],
                                 env=envs[which], check=True, capture_output=True, text=True).stdout.split("\n")
            rows = [l.split() for l in out if l.strip()]
            res[which + "_first"].append(float(rows[0][0]))
            for mb, cpu, flt in rows:
                res[which].append(float(mb)); res[which + "_cpu"].append(float(cpu)); res[which + "_flt"].append(float(flt))
        print(f"round {r}: " + " ".join(f"{k}={v[-PER:] if k in ('old','new') else round(v[-1])}" for k, v in res.items()), flush=True)
finally:
    try:
        limit.lifecycle("DELETE", f"/sandboxes/{sid}")
    except Exception:
        pass
c = statistics.median(res["curl"])
for k, v in res.items():
    m = statistics.median(v)
    pct = f" ({100*m/c:.0f} % of curl)" if not k.endswith("cpu") and not k.endswith("flt") and k != "curl" else ""
    print(f"{k}: median {m:.0f}{pct}  min {min(v):.0f} max {max(v):.0f} n={len(v)}")
