"""Fixtures: one reference server per test session (the real binary, never a mock).

The binary is OPENSANDBOX_SERVER_BIN, else target/debug/opensandbox-server of the
repository. Tests see OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY like users do.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def server():
    binary = os.environ.get("OPENSANDBOX_SERVER_BIN") or str(REPO / "target" / "debug" / "opensandbox-server")
    if not os.path.exists(binary):
        pytest.fail(f"server binary {binary} not found: cargo build -p opensandbox-server")
    data = tempfile.mkdtemp(prefix="opensandbox-pytest-")
    key = "pytest-key"
    out = open(os.path.join(data, "server.out"), "w+")
    proc = subprocess.Popen(
        # bubblewrap over the host's directories, as scripts/with-server.sh does: `auto`
        # would pick runc, whose images need a registry (scripts/local-registry.sh).
        [
            binary,
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            key,
            "--data-dir",
            data,
            "--runtime",
            os.environ.get("WITH_SERVER_RUNTIME", "bwrap"),
        ],
        stdout=out,
        stderr=open(os.path.join(data, "server.log"), "w"),
    )
    addr = None
    for _ in range(200):
        out.seek(0)
        m = re.search(r"listening on (\S+)", out.read())
        if m:
            addr = m.group(1)
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    if addr is None:
        proc.kill()
        pytest.fail("the reference server did not start")
    old = {k: os.environ.get(k) for k in ("OPEN_SANDBOX_DOMAIN", "OPEN_SANDBOX_API_KEY")}
    os.environ["OPEN_SANDBOX_DOMAIN"] = addr
    os.environ["OPEN_SANDBOX_API_KEY"] = key
    yield {"domain": addr, "api_key": key}
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def sandbox_sync(server):
    from opensandbox import SandboxSync

    sb = SandboxSync.create("python:3.11")
    yield sb
    try:
        sb.kill()
    except Exception:
        pass
