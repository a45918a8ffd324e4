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


def test_official_1_1_1_model_aliases_and_defaults():
    from opensandbox.models.filesystem import MoveEntry
    from opensandbox.models.sandboxes import NetworkPolicy, SandboxLifecycle, Volume

    assert NetworkPolicy().default_action == "deny"
    assert NetworkPolicy(**{"defaultAction": "allow"}).default_action == "allow"
    assert NetworkPolicy(default_action="allow").default_action == "allow"
    m = MoveEntry(source="/a", destination="/b")
    assert (m.src, m.dest) == ("/a", "/b")
    assert MoveEntry(src="/a", dest="/b").dest == "/b"
    lc = SandboxLifecycle(**{"preStart": {"command": ["true"], "timeoutSeconds": 5}})
    assert lc.pre_start is not None and lc.pre_start.timeout_seconds == 5
    v = Volume(name="d", host={"path": "/data"}, mountPath="/mnt")
    assert v.mount_path == "/mnt" and not v.read_only
    with pytest.raises(ValueError):
        Volume(name="d", mount_path="/mnt")


def test_official_module_paths_import():
    from opensandbox.adapters.converter import MetricsModelConverter
    from opensandbox.api.execd.models import Metrics
    from opensandbox.models.sandboxes import CredentialProxyConfig
    from opensandbox.models.templates import CreateTemplateRequest, TemplateFilter, TemplateReadiness

    wire = {"cpu_count": 2, "cpu_used_pct": 1.5, "mem_total_mib": 512, "mem_used_mib": 64, "timestamp": 7}
    m = MetricsModelConverter.to_sandbox_metrics(Metrics.from_dict(wire))
    assert (m.cpu_count, m.cpu_used_percentage, m.memory_used_in_mib, m.timestamp) == (2.0, 1.5, 64.0, 7)
    with pytest.raises(KeyError):
        Metrics.from_dict({"cpu_count": 1})
    assert CredentialProxyConfig().enabled is False
    req = CreateTemplateRequest(image="python:3.11", publish="s3://b/t", readiness=TemplateReadiness(warmupSeconds=3))
    assert req.readiness is not None and req.readiness.warmup_seconds == 3
    assert TemplateFilter(pageSize=5).page_size == 5


def test_connection_config_transport_knobs_are_refused_not_ignored():
    from opensandbox.config import ConnectionConfig
    from opensandbox.config.connection_sync import ConnectionConfigSync
    from opensandbox.exceptions import InvalidArgumentException

    cfg = ConnectionConfig()
    assert cfg.with_transport_if_missing() is cfg and cfg.owns_transport
    assert ConnectionConfigSync().with_transport_if_missing().owns_transport
    for kwargs in ({"transport": object()}, {"event_hooks": {"request": [print]}}):
        with pytest.raises(InvalidArgumentException, match="not supported"):
            ConnectionConfig(**kwargs)


def test_native_output_messages_are_unvalidated_models_and_check_their_input():
    """``_native.output_messages`` (a run's kept output) builds what model_construct
    builds; mismatched or non-str input is a clear error."""
    from opensandbox import _native

    got = _native.output_messages(OutputMessage, ["a", "b\n"], [1, 2], True)
    assert got == [
        OutputMessage(text="a", timestamp=1, is_error=True),
        OutputMessage(text="b\n", timestamp=2, is_error=True),
    ]
    assert all(type(m) is OutputMessage for m in got)
    assert got[0].model_fields_set == {"text", "timestamp", "is_error"}
    assert got[0].model_extra is None and got[0].__pydantic_private__ is None
    got[0].text = "z"
    assert got[1].text == "b\n" and got[0].model_dump() == {"text": "z", "timestamp": 1, "is_error": True}
    assert _native.output_messages(OutputMessage, [], [], False) == []
    with pytest.raises(ValueError, match="2 texts but 1 timestamps"):
        _native.output_messages(OutputMessage, ["a", "b"], [1], False)
    with pytest.raises(TypeError, match="not a str"):
        _native.output_messages(OutputMessage, [b"a"], [1], False)
    with pytest.raises(TypeError):
        _native.output_messages(OutputMessage, ["a"], ["x"], False)
    for cls in (int, str, object, Exception):
        with pytest.raises(TypeError, match="not a pydantic model class"):
            _native.output_messages(cls, ["a"], [1], False)


def test_building_messages_leaves_the_collector_as_it_was():
    """The native builders pause the cyclic collector while they fill a list and
    restore its state: on when it was on, off when the user had turned it off."""
    import gc

    from opensandbox import _native

    assert gc.isenabled()
    assert len(_native.output_messages(OutputMessage, ["x"] * 3000, [1] * 3000, False)) == 3000
    assert gc.isenabled()
    gc.disable()
    try:
        _native.output_messages(OutputMessage, ["x"], [1], False)
        assert not gc.isenabled()
    finally:
        gc.enable()
    # Messages built while paused are still tracked: a cycle through one is collected.
    m = _native.output_messages(OutputMessage, ["x"], [1], False)[0]
    assert gc.is_tracked(m)
    m.__dict__["self"] = m
    del m
    assert gc.collect() >= 1


def test_the_models_package_table_is_every_modules_all():
    # opensandbox.models loads its modules lazily from a static table: it must list
    # exactly what each module exports, and every name must resolve to that module's.
    import importlib

    import opensandbox.models as package

    for module, names in package._EXPORTS.items():
        loaded = importlib.import_module(f"opensandbox.models.{module}")
        assert sorted(names) == sorted(loaded.__all__), module
        for name in names:
            assert getattr(package, name) is getattr(loaded, name)
    with pytest.raises(AttributeError):
        package.NoSuchModel  # noqa: B018
