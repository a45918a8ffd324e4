"""Models and exceptions behave like the official SDK's (no server needed)."""

import pytest
from pydantic import ValidationError

from opensandbox.exceptions import SandboxApiException, SandboxError, SandboxException
from opensandbox.models.execd import Execution, ExecutionLogs, OutputMessage, RunCommandOpts
from opensandbox.models.filesystem import EntryInfo, WriteEntry
from opensandbox.models.sandboxes import SandboxImageSpec, SandboxInfo


def test_image_spec_is_positional_and_not_blank():
    assert SandboxImageSpec("python:3.11").image == "python:3.11"
    with pytest.raises(ValidationError):
        SandboxImageSpec("  ")


def test_sandbox_info_reads_the_wire_image_uri():
    info = SandboxInfo.model_validate(
        {"id": "a", "status": {"state": "Running"}, "created_at": "2026-01-01T00:00:00Z", "image": {"uri": "x:1"}}
    )
    assert info.image.image == "x:1"
    assert info.status.state == "Running"


def test_gid_needs_uid():
    with pytest.raises(ValidationError):
        RunCommandOpts(gid=5)
    assert RunCommandOpts(uid=1, gid=5).gid == 5


def test_execution_text_joins_lines_like_the_official_sdk():
    ex = Execution(logs=ExecutionLogs(stdout=[OutputMessage(text=t, timestamp=0) for t in ["a", "\n", "b"]]))
    assert ex.text == "a\nb"
    assert Execution(logs=ExecutionLogs(stdout=[OutputMessage(text="x\r\n", timestamp=0)])).text == "x"
    assert ex.model_dump()["logs"]["stdout"][0]["text"] == "a"


def test_write_entry_defaults_and_entry_alias():
    assert WriteEntry(path="/x", data="d").mode == 755
    with pytest.raises(ValidationError):
        WriteEntry(path="")
    e = EntryInfo.model_validate(
        {
            "path": "/x",
            "type": "file",
            "mode": 644,
            "owner": "r",
            "group": "r",
            "size": 1,
            "modified_at": "2026-01-01T00:00:00Z",
            "created_at": "2026-01-01T00:00:00Z",
        }
    )
    assert e.entry_type == "file"


def test_exception_hierarchy_and_str():
    e = SandboxApiException("boom", status_code=404, error=SandboxError("SANDBOX::NOT_FOUND", "gone"), request_id="r1")
    assert isinstance(e, SandboxException)
    assert e.status_code == 404
    assert str(e) == "boom | [SANDBOX::NOT_FOUND] gone | request_id=r1"


def test_connection_config_reads_the_environment(monkeypatch):
    from datetime import timedelta

    from opensandbox import ConnectionConfig

    monkeypatch.setenv("OPEN_SANDBOX_DOMAIN", "example.test:9000")
    monkeypatch.setenv("OPEN_SANDBOX_API_KEY", "k1")
    cfg = ConnectionConfig()
    assert cfg.get_domain() == "example.test:9000" and cfg.get_api_key() == "k1"
    assert cfg.request_timeout == timedelta(seconds=30) and cfg.protocol == "http"
    assert cfg.get_base_url() == "http://example.test:9000/v1"
    explicit = ConnectionConfig(domain="https://h.test", api_key="k2")
    assert explicit.get_base_url() == "https://h.test/v1" and explicit.get_api_key() == "k2"
    with pytest.raises(ValidationError):
        ConnectionConfig(protocol="ftp")
