"""``ConnectionConfig(retry_policy=...)``: the official 1.1.1 ``RetryPolicy`` mapped onto
the native core's retries, checked against a tiny HTTP stub that answers a scripted
sequence of statuses and counts the requests."""

from __future__ import annotations

import http.server
import json
import threading
from datetime import timedelta
from http import HTTPStatus
from typing import Iterator, List, Tuple

import pytest

from opensandbox import Sandbox, SandboxManager
from opensandbox.config import ConnectionConfig
from opensandbox.exceptions import InvalidArgumentException, SandboxException
from opensandbox.transport import JitterMode, RetryEvent, RetryPolicy

SANDBOX = {
    "id": "sbx-1",
    "status": {"state": "Running", "reason": "CONTAINER_RUNNING"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "createdAt": "2026-01-01T00:00:00Z",
    "expiresAt": "2026-01-01T00:10:00Z",
    "metadata": {},
}


class _Stub:
    """Answers GET /v1/sandboxes/{id} with the scripted statuses, then 200."""

    def __init__(self) -> None:
        self.script: List[int] = []
        self.hits: List[Tuple[str, str]] = []
        self.endpoint_hits = 0
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                if "/endpoints/" in self.path:
                    stub.endpoint_hits += 1
                    body = json.dumps({"endpoint": "127.0.0.1:1/sbx", "headers": {}}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                stub.hits.append((self.command, self.path))
                status = stub.script.pop(0) if stub.script else 200
                body = json.dumps(SANDBOX if status == 200 else {"code": "X", "message": "scripted"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = _answer
            do_POST = _answer
            do_DELETE = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.domain = f"127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def stub() -> Iterator[_Stub]:
    s = _Stub()
    yield s
    s.httpd.shutdown()


FAST = dict(initial_backoff=timedelta(milliseconds=5), max_backoff=timedelta(milliseconds=20))


def _cfg(stub: _Stub, policy: RetryPolicy | None = None) -> ConnectionConfig:
    if policy is None:
        return ConnectionConfig(domain=stub.domain, api_key="k")
    return ConnectionConfig(domain=stub.domain, api_key="k", retry_policy=policy)


async def _get(cfg: ConnectionConfig) -> str:
    mgr = await SandboxManager.create(cfg)
    try:
        return (await mgr.get_sandbox_info("sbx-1")).id
    finally:
        await mgr.close()


def test_defaults_are_the_official_ones_and_map_to_the_core():
    p = RetryPolicy()
    assert p.max_retries == 3 and p.backoff_multiplier == 2.0 and p.jitter is JitterMode.DECORRELATED
    assert p.initial_backoff == timedelta(milliseconds=500) and p.max_backoff == timedelta(seconds=30)
    assert p.retryable_status_codes_idempotent == {HTTPStatus(429), HTTPStatus(502), HTTPStatus(503)}
    assert ConnectionConfig().retry_policy == RetryPolicy()
    native = ConnectionConfig(api_key="k")._to_native_config()
    assert native["retry"] == {
        "max_retries": 3,
        "initial_backoff_ms": 500,
        "max_backoff_ms": 30000,
        "multiplier": 2.0,
        "jitter": True,
        "retryable_status_codes": [429, 502, 503],
    }
    assert ConnectionConfig(retry_policy=RetryPolicy.disabled())._to_native_config()["retry"] is None
    no_jitter = ConnectionConfig(retry_policy=RetryPolicy(jitter=JitterMode.NONE))._to_native_config()
    assert no_jitter["retry"]["jitter"] is False
    assert native["endpoint_cache_ttl_s"] == 600.0 and native["endpoint_cache_size"] == 1024
    off = ConnectionConfig(endpoint_cache_disabled=True)._to_native_config()
    assert (off["endpoint_cache_ttl_s"], off["endpoint_cache_size"]) == (0.0, 0)


def test_policy_validation_and_unsupported_knobs_are_refused():
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError):
        RetryPolicy(backoff_multiplier=0.5)
    assert not RetryPolicy.disabled().wraps_transport() and RetryPolicy().wraps_transport()

    def hook(e: RetryEvent) -> None:
        pass

    for kwargs in (
        {"retryable_status_codes_non_idempotent": {HTTPStatus.SERVICE_UNAVAILABLE}},
        {"per_attempt_timeout": timedelta(seconds=1)},
        {"overall_deadline": timedelta(seconds=5)},
        {"on_retry": hook},
    ):
        with pytest.raises(InvalidArgumentException, match="not supported"):
            ConnectionConfig(retry_policy=RetryPolicy(**kwargs))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentException, match="RetryPolicy"):
        ConnectionConfig(retry_policy=object())


async def test_retryable_statuses_are_retried_up_to_max_retries(stub: _Stub):
    stub.script = [503, 502]
    assert await _get(_cfg(stub, RetryPolicy(**FAST))) == "sbx-1"
    assert len(stub.hits) == 3

    stub.hits.clear()
    stub.script = [429, 429, 429, 429, 429]
    with pytest.raises(SandboxException):
        await _get(_cfg(stub, RetryPolicy(max_retries=2, **FAST)))
    assert len(stub.hits) == 3, "initial attempt + max_retries"


async def test_statuses_outside_the_policy_and_disabled_policies_fail_at_once(stub: _Stub):
    # 504 is not in the official default set (the core's own default has it).
    stub.script = [504]
    with pytest.raises(SandboxException):
        await _get(_cfg(stub, RetryPolicy(**FAST)))
    assert len(stub.hits) == 1

    stub.hits.clear()
    stub.script = [504, 504]
    policy = RetryPolicy(retryable_status_codes_idempotent={HTTPStatus.GATEWAY_TIMEOUT}, **FAST)
    assert await _get(_cfg(stub, policy)) == "sbx-1"
    assert len(stub.hits) == 3

    stub.hits.clear()
    stub.script = [503]
    with pytest.raises(SandboxException):
        await _get(_cfg(stub, RetryPolicy.disabled()))
    assert len(stub.hits) == 1


async def test_post_is_not_retried_on_a_status(stub: _Stub):
    stub.script = [503, 503]
    mgr = await SandboxManager.create(_cfg(stub, RetryPolicy(**FAST)))
    try:
        with pytest.raises(SandboxException):
            await mgr.pause_sandbox("sbx-1")
    finally:
        await mgr.close()
    assert stub.hits == [("POST", "/v1/sandboxes/sbx-1/pause")]


async def test_endpoint_lookups_are_cached_per_config_and_dropped_on_kill(stub: _Stub):
    cfg = _cfg(stub)
    for _ in range(3):
        sb = await Sandbox.connect("sbx-1", connection_config=cfg, skip_health_check=True)
        await sb.close()
    assert stub.endpoint_hits == 1, "one lookup for three connects through one config"
    await sb.kill()
    sb = await Sandbox.connect("sbx-1", connection_config=cfg, skip_health_check=True)
    await sb.close()
    assert stub.endpoint_hits == 2, "kill dropped the cached endpoint"

    off = ConnectionConfig(domain=stub.domain, api_key="k", endpoint_cache_disabled=True)
    for _ in range(2):
        sb = await Sandbox.connect("sbx-1", connection_config=off, skip_health_check=True)
        await sb.close()
    assert stub.endpoint_hits == 4
