"""Every op and argument key the public API sends exists in the op layer's manifest.

No server: a spy stands in for the native client and records what each public method
of the async and the sync API sends. Each recorded call is then checked against
``_native.ops_manifest()`` (op name, top-level keys, JSON types, required keys) and
replayed through a real native client pointed at a closed port: the op layer parses
the arguments before it connects, so a misspelt key anywhere (nested entries too)
fails with ``invalid_argument`` instead of a connection error. A last check scans the
package sources for op names, so a call site the spy never reached fails as well.
"""

from __future__ import annotations

import asyncio
import io
import pathlib
import re
from datetime import timedelta
from typing import Any, Dict, List, Tuple

import pytest

from code_interpreter import CodeInterpreter, CodeInterpreterSync
from code_interpreter.models.code import CodeContext
from opensandbox import (
    ConnectionConfig,
    ConnectionConfigSync,
    ExecutionHandlers,
    ExecutionHandlersSync,
    Sandbox,
    SandboxManager,
    SandboxManagerSync,
    SandboxSync,
    _native,
)
from opensandbox.models.execd import RunCommandOpts
from opensandbox.models.filesystem import (
    ContentReplaceEntry,
    DirectoryListEntry,
    MoveEntry,
    SearchEntry,
    SetPermissionEntry,
    WriteEntry,
)
from opensandbox.models.isolated import (
    BindMount,
    CreateIsolatedSessionRequest,
    EnvPassthroughSpec,
    IsolatedOverlaySpec,
    IsolatedRunOpts,
    IsolatedWorkspaceSpec,
)
from opensandbox.models.sandboxes import (
    PVC,
    Credential,
    CredentialAuth,
    CredentialBinding,
    CredentialMatch,
    CredentialProxyConfig,
    CredentialSubstitution,
    Host,
    InlineCredentialSource,
    LifecycleHook,
    NetworkPolicy,
    NetworkRule,
    PeriodicLifecycleHook,
    PlatformSpec,
    SandboxFilter,
    SandboxImageAuth,
    SandboxImageSpec,
    SandboxLifecycle,
    SnapshotFilter,
    Volume,
)
from opensandbox.models.templates import CreateTemplateRequest, TemplateFilter, TemplateReadiness

SRC = pathlib.Path(__file__).resolve().parents[1] / "python"
MANIFEST = {op["name"]: op for op in _native.ops_manifest()["ops"]}
# Native methods that take an op's arguments without being called by op name.
NATIVE_AS = {"read_bytes": "files.read_bytes", "watch_metrics": "sandbox.get_metrics"}
# Ops whose arguments name handles of a live session: checked against the manifest
# only (a replay would be refused for the handle, not for a key).
HANDLE_OPS = {"execution.next_batch", "release", "pty.read", "pty.write", "pty.resize", "pty.signal", "pty.close"}

END = {
    "type": "end",
    "ok": True,
    "execution": {
        "id": "ex-1",
        "exit_code": 0,
        "stdout": ["hi"],
        "stderr": [],
        "stdout_timestamps": [1],
        "stderr_timestamps": [],
        "results": [],
        "error": None,
        "complete": {"execution_time_ms": 1, "timestamp": 2},
        "execution_count": None,
    },
}
CANNED: Dict[str, Any] = {
    "sandbox.create": {"id": "sb-1", "handle": 1},
    "sandbox.connect": {"id": "sb-1", "handle": 1},
    "sandbox.resume": {"id": "sb-1", "handle": 1},
    "sandbox.is_healthy": {"healthy": True},
    "commands.start": {"handle": 7, "id": "ex-1"},
    "commands.start_in_session": {"handle": 7, "id": "ex-1"},
    "code.start": {"handle": 7, "id": "ex-1"},
    "execution.next_batch": {
        "events": [
            {"type": "init", "id": "ex-1", "timestamp": 1},
            {"type": "stdout", "text": "hi", "timestamp": 1},
            END,
        ],
        "done": True,
    },
    "release": {"released": True},
    "download.open": {"handle": 8},
    "commands.create_session": {"session_id": "s-1"},
    "pty.create": {"session_id": "s-1"},
    "pty.get": {"session_id": "s-1", "running": True, "output_offset": 2},
    "pty.attach": {"handle": 9, "session_id": "s-1", "mode": "pty", "since": 0, "replay_end": 0},
    "pty.read": {
        "data_b64": "aGk=",
        "output": "hi",
        "bytes": 2,
        "channel": "stdout",
        "offset": 0,
        "next_offset": 2,
        "exit_code": 0,
        "errors": [],
        "closed": True,
        "close_code": 1000,
        "close_reason": "process exited",
        "timed_out": False,
        "done": True,
    },
    "pty.close": {"session_id": "s-1", "next_offset": 2},
    "pty.write": None,
    "pty.resize": None,
    "pty.signal": None,
    "commands.follow_logs": {"handle": 7},
    "isolation.create": {"session_id": "s-1", "created_at": None},
    "isolation.attach": {"session_id": "s-1"},
    "isolation.start": {"handle": 7, "id": "s-1"},
}


class Stop(Exception):
    """Raised by the spy after recording a call whose result does not matter."""


class _Task:
    def cancel(self) -> None:
        pass


class _Watch:
    def next_item(self) -> Any:
        return None

    def next_item_async(self, done: Any) -> _Task:
        done(True, None)
        return _Task()

    def close(self) -> None:
        pass


class Spy:
    """Records (op, args, blobs) and answers with canned results (or :class:`Stop`)."""

    def __init__(self) -> None:
        self.calls: List[Tuple[str, Dict[str, Any], Any]] = []

    def _answer(self, op: str, args: Dict[str, Any], blobs: Any = None) -> Any:
        self.calls.append((op, args, blobs))
        if op in CANNED:
            return CANNED[op]
        raise Stop(op)

    def _async(self, fn: Any, done: Any) -> _Task:
        try:
            v = fn()
        except Stop as e:
            done(False, e)
        else:
            done(True, v)
        return _Task()

    def call(self, op: str, args: Dict[str, Any], blobs: Any = None) -> Any:
        return self._answer(op, args, blobs)

    def call_async(self, op: str, args: Dict[str, Any], done: Any, blobs: Any = None) -> _Task:
        return self._async(lambda: self._answer(op, args, blobs), done)

    def read_bytes(self, args: Dict[str, Any]) -> bytes:
        self.calls.append(("read_bytes", args, None))
        return b"x"

    def read_bytes_async(self, args: Dict[str, Any], done: Any) -> _Task:
        return self._async(lambda: self.read_bytes(args), done)

    def read_chunks(self, handle: int, max: int, size: int) -> List[bytes]:
        return []

    def read_chunks_async(self, handle: int, max: int, size: int, done: Any) -> _Task:
        done(True, [])
        return _Task()

    def _groups(self, handle: int, max: int, cls: Any, stdout: bool, stderr: bool) -> Any:
        # What the native method pulls, as an op call; the canned batch as its groups.
        batch = self._answer("execution.next_batch", {"handle": handle, "max": max})
        groups: List[Tuple[int, Any]] = []
        for ev in batch["events"]:
            if ev["type"] in ("stdout", "stderr"):
                if stdout if ev["type"] == "stdout" else stderr:
                    m = cls.model_construct(text=ev["text"], timestamp=ev["timestamp"], is_error=ev["type"] == "stderr")
                    groups.append((1 if ev["type"] == "stdout" else 2, [m]))
            else:
                groups.append((0, ev))
        return groups, batch["done"]

    def dispatch_events(self, handle: int, max: int, cls: Any, on_stdout: Any, on_stderr: Any, on_other: Any) -> bool:
        # The native method's dispatch of the canned batch, in item order.
        groups, done = self._groups(handle, max, cls, on_stdout is not None, on_stderr is not None)
        for kind, payload in groups:
            if kind == 0:
                on_other(payload)
            else:
                for m in payload:
                    (on_stdout if kind == 1 else on_stderr)(m)
        return bool(done)

    def next_events_async(self, handle: int, max: int, cls: Any, stdout: bool, stderr: bool, done: Any) -> _Task:
        return self._async(lambda: self._groups(handle, max, cls, stdout, stderr), done)

    def watch_metrics(self, args: Dict[str, Any]) -> _Watch:
        self.calls.append(("watch_metrics", args, None))
        return _Watch()

    def watch_metrics_async(self, args: Dict[str, Any], done: Any) -> _Task:
        return self._async(lambda: self.watch_metrics(args), done)

    def forget(self, sandbox_id: str) -> None:
        pass


async def _try(coro: Any) -> None:
    try:
        r = await coro
        if hasattr(r, "__aiter__"):
            async for _ in r:
                pass
    except Stop:
        pass


def _try_sync(fn: Any, *args: Any, **kw: Any) -> None:
    try:
        r = fn(*args, **kw)
        if hasattr(r, "__next__"):
            for _ in r:
                pass
    except Stop:
        pass


def _create_11() -> Dict[str, Any]:
    """Every 1.1 option of ``Sandbox.create``."""
    return {
        "resource_requests": {"cpu": "500m"},
        "platform": PlatformSpec(os="linux", arch="amd64"),
        "credential_proxy": CredentialProxyConfig(enabled=True),
        "volumes": [
            Volume(name="h", host=Host(path="/srv"), mount_path="/h", read_only=True, sub_path="x"),
            Volume(name="p", pvc=PVC(claim_name="c", delete_on_sandbox_termination=True), mount_path="/p"),
        ],
        "lifecycle": SandboxLifecycle(
            pre_start=LifecycleHook(command=["true"], timeout_seconds=5),
            periodic=[PeriodicLifecycleHook(name="t", schedule="@every 5s", command=["true"])],
        ),
    }


def _vault() -> Dict[str, Any]:
    return {
        "credentials": [
            Credential(name="c", source=InlineCredentialSource(value="v")),
            {"name": "d", "source": {"type": "inline", "value": "w"}},
        ],
        "bindings": [
            CredentialBinding(
                name="b",
                match=CredentialMatch(hosts=["a.example.com"], schemes=["https"], ports=[443]),
                auth=CredentialAuth(
                    type="passthrough",
                    substitutions=[CredentialSubstitution(credential="c", placeholder="P", **{"in": ["query"]})],
                ),
            ),
            {
                "name": "k",
                "match": {"hosts": ["b.example.com"]},
                "auth": {"type": "apiKey", "name": "X-K", "credential": "c"},
            },
        ],
    }


def _template() -> CreateTemplateRequest:
    return CreateTemplateRequest(
        image="python:3.11",
        publish="s3://b/p",
        resource_limits={"cpu": "1"},
        entrypoint=["sleep", "infinity"],
        env={"A": "1"},
        metadata={"m": "1"},
        readiness=TemplateReadiness(probe="cmd://true", warmup_seconds=5),
        format="native",
    )


def _entries() -> Dict[str, Any]:
    return {
        "write": [
            WriteEntry(path="/a", data="text", mode=644, owner="u", group="g"),
            WriteEntry(path="/b", data=b"bytes"),
            WriteEntry(path="/c", data=io.BytesIO(b"stream")),
        ],
        "dirs": [WriteEntry(path="/d", mode=755)],
        "perms": [SetPermissionEntry(path="/a", mode=600, owner="u", group="g")],
        "moves": [MoveEntry(src="/a", dest="/b")],
        "replace": [ContentReplaceEntry(path="/a", old_content="x", new_content="y")],
        "rules": [NetworkRule(action="allow", target="example.com")],
    }


def _isolated_request() -> CreateIsolatedSessionRequest:
    return CreateIsolatedSessionRequest(
        workspace=IsolatedWorkspaceSpec(path="/w", mode="overlay"),
        overlays=[IsolatedOverlaySpec(path="/d", mode="overlay", persist=False)],
        profile="strict",
        extra_writable=["/data"],
        binds=[BindMount(source="/data/a", dest="/b", readonly=True)],
        share_net=False,
        env_passthrough=EnvPassthroughSpec(mode="allow", keys=["PATH"]),
        uid=1000,
        gid=1000,
        uid_mode="setpriv",
        idle_timeout_seconds=60,
    )


async def _exercise_isolation_async(sb: Any, h: Any) -> None:
    e = _entries()
    fi = sb.files_with_identity(1000, 1000)
    iso = sb.isolation
    session = await iso.create(_isolated_request())
    opts = IsolatedRunOpts(envs={"A": "1"}, timeout_seconds=5)
    for coro in [
        fi.read_file("/a"),
        fi.read_bytes("/a"),
        fi.read_bytes_stream("/a"),
        fi.write_files(e["write"]),
        fi.create_directories(e["dirs"]),
        fi.delete_files(["/a"]),
        fi.delete_directories(["/d"]),
        fi.move_files(e["moves"]),
        fi.set_permissions(e["perms"]),
        fi.replace_contents_detailed(e["replace"]),
        fi.search(SearchEntry(path="/", pattern="*")),
        fi.list_directory(DirectoryListEntry(path="/", depth=1)),
        fi.get_file_info(["/a"]),
        iso.capabilities(),
        iso.list(),
        iso.attach("s-1"),
        iso.run_once("echo hi", workspace="/w", workspace_mode="ro", opts=opts, profile="balanced", share_net=True),
        session.run("echo hi", opts=opts, handlers=h),
        session.run_background("sleep 1", opts=opts),
        session.run_status("r-1"),
        session.run_logs("r-1", cursor=3),
        session.get(),
        session.delete(),
        session.files.read_bytes("/a"),
        session.files.write_file("/a", "x"),
        session.files.list_directory(DirectoryListEntry(path="/")),
    ]:
        await _try(coro)
    async with iso.session(_isolated_request()) as s2:
        await _try(s2.get())


def _exercise_isolation_sync(sb: Any, h: Any) -> None:
    e = _entries()
    fi = sb.files_with_identity(0, 0)
    iso = sb.isolation
    session = iso.create(_isolated_request())
    for fn, *args in [
        (fi.read_file, "/a"),
        (fi.write_files, e["write"]),
        (fi.get_file_info, ["/a"]),
        (iso.capabilities,),
        (iso.list,),
        (iso.attach, "s-1"),
        (session.run_status, "r-1"),
        (session.run_logs, "r-1"),
        (session.get,),
        (session.delete,),
        (session.files.read_file, "/a"),
    ]:
        _try_sync(fn, *args)
    _try_sync(session.run, "echo", opts=IsolatedRunOpts(timeout_seconds=1), handlers=h)
    _try_sync(session.run_background, "echo")
    _try_sync(iso.run_once, "echo", workspace="/w")


async def _exercise_async(spy: Spy) -> None:
    cfg = ConnectionConfig(domain="spy.invalid:1", api_key="k")
    cfg._native = spy
    policy = NetworkPolicy(default_action="deny", egress=[NetworkRule(action="allow", target="example.com")])
    sb = await Sandbox.create(
        "python:3.11",
        timeout=None,
        env={"A": "1"},
        metadata={"m": "1"},
        resource={"cpu": "1"},
        network_policy=policy,
        extensions={"e": "1"},
        entrypoint=["sleep", "infinity"],
        connection_config=cfg,
        skip_health_check=True,
    )
    await Sandbox.create(snapshot_id="snap-1", connection_config=cfg)
    await Sandbox.create(
        SandboxImageSpec("python:3.11", auth=SandboxImageAuth(username="u", password="p")),
        connection_config=cfg,
        **_create_11(),
    )
    await Sandbox.create_from_template(
        "tpl_1", timeout=timedelta(minutes=5), metadata={"m": "1"}, network_policy=policy, connection_config=cfg
    )
    await Sandbox.connect("sb-1", connection_config=cfg)
    await Sandbox.resume("sb-1", connection_config=cfg)
    e = _entries()
    h = ExecutionHandlers(on_stdout=lambda m: None, on_init=lambda i: None, skip_accumulation=True)
    opts = RunCommandOpts(
        background=False, working_directory="/", timeout=timedelta(seconds=5), uid=0, gid=0, envs={"E": "1"}
    )
    for coro in [
        sb.get_info(),
        sb.get_endpoint(8080),
        sb.get_signed_endpoint(8080, 1_900_000_000),
        sb.get_metrics(),
        sb.get_diagnostic_logs("lifecycle"),
        sb.get_diagnostic_events("lifecycle"),
        sb.renew(timedelta(minutes=5)),
        sb.patch_metadata({"a": "1", "b": None}),
        sb.create_snapshot("snap"),
        sb.get_egress_policy(),
        sb.patch_egress_rules(e["rules"]),
        sb.delete_egress_rules(["example.com"]),
        sb.pause(),
        sb.is_healthy(),
        sb.commands.run("echo hi"),
        sb.commands.run(["echo", "hi"], opts=opts, handlers=h),
        sb.commands.set_env("K", "v"),
        sb.commands.interrupt("ex-1"),
        sb.commands.get_command_status("ex-1"),
        sb.commands.get_background_command_logs("ex-1", cursor=3),
        sb.commands.create_session(working_directory="/"),
        sb.commands.run_in_session("s-1", "pwd", working_directory="/", timeout=timedelta(seconds=2), handlers=h),
        sb.commands.run_in_session("s-1", "pwd"),
        sb.commands.delete_session("s-1"),
        sb.files.read_file("/a", offset=1, limit=2),
        sb.files.read_bytes("/a", range_header="bytes=0-1"),
        sb.files.read_bytes_stream("/a"),
        sb.files.write_files(e["write"]),
        sb.files.write_file("/x", "data", mode=600, owner="u", group="g"),
        sb.files.create_directories(e["dirs"]),
        sb.files.delete_files(["/a"]),
        sb.files.delete_directories(["/d"]),
        sb.files.move_files(e["moves"]),
        sb.files.set_permissions(e["perms"]),
        sb.files.replace_contents(e["replace"]),
        sb.files.replace_contents_detailed(e["replace"]),
        sb.files.search(SearchEntry(path="/", pattern="*.txt")),
        sb.files.list_directory(DirectoryListEntry(path="/", depth=2)),
        sb.files.get_file_info(["/a"]),
        sb.metrics.get_metrics(sb.id),
        sb.credential_vault.create(**_vault()),
        sb.credential_vault.get(),
        sb.credential_vault.patch(
            expected_revision=1,
            credentials={"add": [{"name": "x", "source": {"value": "y"}}], "delete": ["c"]},
            bindings={"delete": ["b"], "replace": [_vault()["bindings"][1]]},
        ),
        sb.credential_vault.delete(),
        sb.credential_vault.list_credentials(),
        sb.credential_vault.get_credential("c"),
        sb.credential_vault.list_bindings(),
        sb.credential_vault.get_binding("b"),
        sb.kill(),
        sb.close(),
    ]:
        await _try(coro)
    try:
        async for _ in sb.metrics.watch_metrics():
            pass
    except Stop:
        pass
    for coro in [
        sb.pty.create_session(cwd="/w", command="top"),
        sb.pty.get_session("s-1"),
        sb.pty.delete_session("s-1"),
    ]:
        await _try(coro)
    term = await sb.pty.attach("s-1", since=0, mode="pipe", takeover=True)
    for coro in [
        term.write("ls\r"),
        term.write(b"\x03"),
        term.resize(100, 30),
        term.signal("SIGINT"),
        term.read(until="$ ", timeout=1.0),
        term.read(until_exit=True),
    ]:
        await _try(coro)
    async for _ in term:
        pass
    await term.close()
    async for _ in sb.pty.follow_logs("ex-1", cursor=3, interval=0.1):
        pass
    await _exercise_isolation_async(sb, h)
    ci = await CodeInterpreter.create(sb)
    ctx = CodeContext(id="ctx-1", language="python")
    for coro in [
        ci.codes.create_context("python"),
        ci.codes.get_context("ctx-1"),
        ci.codes.list_contexts("python"),
        ci.codes.delete_context("ctx-1"),
        ci.codes.delete_contexts("python"),
        ci.codes.run("print(1)"),
        ci.codes.run("print(1)", language="javascript", handlers=h),
        ci.codes.run("print(1)", context=ctx),
        ci.codes.interrupt("ctx-1"),
    ]:
        await _try(coro)
    m = await SandboxManager.create(cfg)
    for coro in [
        m.list_sandbox_infos(SandboxFilter(states=["Running"], metadata={"a": "1"}, page=1, page_size=10)),
        m.get_sandbox_info("sb-1"),
        m.get_diagnostic_logs("sb-1", "lifecycle"),
        m.get_diagnostic_events("sb-1", "lifecycle"),
        m.patch_sandbox_metadata("sb-1", {"a": None}),
        m.kill_sandbox("sb-1"),
        m.renew_sandbox("sb-1", timedelta(minutes=1)),
        m.pause_sandbox("sb-1"),
        m.resume_sandbox("sb-1"),
        m.create_snapshot("sb-1", "snap"),
        m.get_snapshot("snap-1"),
        m.list_snapshots(SnapshotFilter(sandbox_id="sb-1", states=["Ready"], page=1, page_size=5)),
        m.delete_snapshot("snap-1"),
        m.create_template(_template()),
        m.get_template("tpl_1"),
        m.list_templates(TemplateFilter(metadata={"m": "1"}, page=1, page_size=5)),
        m.list_templates(),
        m.delete_template("tpl_1"),
    ]:
        await _try(coro)


def _exercise_sync(spy: Spy) -> None:
    cfg = ConnectionConfigSync(domain="spy.invalid:1", api_key="k")
    cfg._native = spy
    policy = NetworkPolicy(default_action="deny", egress=[NetworkRule(action="allow", target="example.com")])
    sb = SandboxSync.create(
        "python:3.11",
        timeout=timedelta(minutes=1),
        env={"A": "1"},
        metadata={"m": "1"},
        resource={"cpu": "1"},
        network_policy=policy,
        extensions={"e": "1"},
        entrypoint=["sleep", "infinity"],
        connection_config=cfg,
    )
    SandboxSync.create("python:3.11", connection_config=cfg, **_create_11())
    SandboxSync.create_from_template("tpl_1", timeout=timedelta(minutes=5), connection_config=cfg)
    SandboxSync.connect("sb-1", connection_config=cfg, skip_health_check=True)
    SandboxSync.resume("sb-1", connection_config=cfg)
    e = _entries()
    h = ExecutionHandlersSync(on_stdout=lambda m: None, on_error=lambda x: None)
    opts = RunCommandOpts(background=True, working_directory="/", timeout=timedelta(seconds=5), envs={"E": "1"})
    calls = [
        (sb.get_info,),
        (sb.get_endpoint, 8080),
        (sb.get_signed_endpoint, 8080, 1_900_000_000),
        (sb.get_metrics,),
        (sb.get_diagnostic_logs, "lifecycle"),
        (sb.get_diagnostic_events, "lifecycle"),
        (sb.renew, timedelta(minutes=5)),
        (sb.patch_metadata, {"a": "1"}),
        (sb.create_snapshot,),
        (sb.get_egress_policy,),
        (sb.patch_egress_rules, e["rules"]),
        (sb.delete_egress_rules, ["example.com"]),
        (sb.pause,),
        (sb.is_healthy,),
        (sb.commands.run, "echo hi"),
        (sb.commands.set_env, "K", "v"),
        (sb.commands.interrupt, "ex-1"),
        (sb.commands.get_command_status, "ex-1"),
        (sb.commands.get_background_command_logs, "ex-1"),
        (sb.commands.create_session,),
        (sb.commands.delete_session, "s-1"),
        (sb.files.read_file, "/a"),
        (sb.files.read_bytes, "/a"),
        (sb.files.read_bytes_stream, "/a"),
        (sb.files.write_files, e["write"]),
        (sb.files.write_file, "/x", b"data"),
        (sb.files.create_directories, e["dirs"]),
        (sb.files.delete_files, ["/a"]),
        (sb.files.delete_directories, ["/d"]),
        (sb.files.move_files, e["moves"]),
        (sb.files.set_permissions, e["perms"]),
        (sb.files.replace_contents, e["replace"]),
        (sb.files.replace_contents_detailed, e["replace"]),
        (sb.files.search, SearchEntry(path="/", pattern="*")),
        (sb.files.list_directory, DirectoryListEntry(path="/")),
        (sb.files.get_file_info, ["/a"]),
        (sb.metrics.get_metrics, sb.id),
        (sb.metrics.watch_metrics,),
        (sb.credential_vault.get,),
        (sb.credential_vault.delete,),
        (sb.credential_vault.list_credentials,),
        (sb.credential_vault.get_credential, "c"),
        (sb.credential_vault.list_bindings,),
        (sb.credential_vault.get_binding, "b"),
        (sb.kill,),
        (sb.close,),
    ]
    _try_sync(sb.credential_vault.create, **_vault())
    _try_sync(sb.credential_vault.patch, expected_revision=2, bindings={"delete": ["b"]})
    for fn, *args in calls:
        _try_sync(fn, *args)
    _try_sync(sb.commands.run, "echo", opts=opts, handlers=h)
    _try_sync(sb.commands.run_in_session, "s-1", "pwd", timeout=timedelta(seconds=1), handlers=h)
    _try_sync(sb.commands.run_in_session, "s-1", "pwd")
    for fn, *args in [(sb.pty.create_session,), (sb.pty.get_session, "s-1"), (sb.pty.delete_session, "s-1")]:
        _try_sync(fn, *args)
    with sb.pty.attach("s-1") as term:
        term.write("ls\r")
        term.resize(80, 24)
        term.read(until="$ ")
        for _ in term:
            pass
    for _ in sb.pty.follow_logs("ex-1"):
        pass
    _exercise_isolation_sync(sb, h)
    ci = CodeInterpreterSync.create(sb)
    for fn, *args in [
        (ci.codes.create_context, "python"),
        (ci.codes.get_context, "ctx-1"),
        (ci.codes.list_contexts, "python"),
        (ci.codes.delete_context, "ctx-1"),
        (ci.codes.delete_contexts, "python"),
        (ci.codes.run, "print(1)"),
        (ci.codes.interrupt, "ctx-1"),
    ]:
        _try_sync(fn, *args)
    _try_sync(ci.codes.run, "1", context=CodeContext(id="ctx-1", language="python"), handlers=h)
    m = SandboxManagerSync(cfg)
    for fn, *args in [
        (m.list_sandbox_infos, SandboxFilter()),
        (m.get_sandbox_info, "sb-1"),
        (m.get_diagnostic_logs, "sb-1", "lifecycle"),
        (m.get_diagnostic_events, "sb-1", "lifecycle"),
        (m.patch_sandbox_metadata, "sb-1", {"a": "1"}),
        (m.kill_sandbox, "sb-1"),
        (m.renew_sandbox, "sb-1", timedelta(minutes=1)),
        (m.pause_sandbox, "sb-1"),
        (m.resume_sandbox, "sb-1"),
        (m.create_snapshot, "sb-1"),
        (m.get_snapshot, "snap-1"),
        (m.list_snapshots, SnapshotFilter()),
        (m.delete_snapshot, "snap-1"),
        (m.create_template, _template()),
        (m.get_template, "tpl_1"),
        (m.list_templates, TemplateFilter(page=2)),
        (m.delete_template, "tpl_1"),
    ]:
        _try_sync(fn, *args)


@pytest.fixture(scope="module")
def recorded() -> List[Tuple[str, Dict[str, Any], Any]]:
    spy = Spy()
    asyncio.run(_exercise_async(spy))
    _exercise_sync(spy)
    return spy.calls


TYPES = {
    "string": (str,),
    "int": (int,),
    "number": (int, float),
    "bool": (bool,),
    "list": (list, tuple),
    "object": (dict,),
    "string|int": (str, int),
    "object|int": (dict, int),
}


def _type_ok(spec: Dict[str, Any], value: Any) -> bool:
    if value is None:
        return bool(spec["nullable"])
    want = TYPES.get(spec["type"])
    if want is None:
        return True
    if isinstance(value, bool) and spec["type"] != "bool":
        return False
    return isinstance(value, want)


def test_every_sent_op_and_key_is_in_the_manifest(recorded):
    problems = []
    for name, args, _ in recorded:
        op = NATIVE_AS.get(name, name)
        spec = MANIFEST.get(op)
        if spec is None:
            problems.append(f"{op}: not an op of the manifest")
            continue
        fields = {f["name"]: f for f in spec["args"]}
        for key, value in args.items():
            if key not in fields:
                problems.append(f"{op}: key {key!r} is not in the manifest")
            elif not _type_ok(fields[key], value):
                problems.append(f"{op}: {key}={value!r} is not {fields[key]['type']}")
        for f in spec["args"]:
            if f["required"] and f["name"] not in args:
                problems.append(f"{op}: required key {f['name']!r} missing")
    assert not problems, "\n".join(problems)


def test_the_op_layer_parses_every_sent_call(recorded):
    """Replayed against a closed port: parsing (unknown keys, nested entries, types)
    happens before connecting, so anything but invalid_argument means it parsed."""
    from opensandbox._bridge import _await_native

    client = _native.Client({"domain": "127.0.0.1:9", "api_key": "", "request_timeout_s": 2})
    seen = {}
    for name, args, blobs in recorded:
        op = NATIVE_AS.get(name, name)
        if op not in HANDLE_OPS:
            seen.setdefault(repr((name, args)), (name, op, args, [b""] * len(blobs) if blobs else None))

    async def replay(name: str, op: str, args: Dict[str, Any], data: Any) -> Any:
        if name == "read_bytes":
            start = lambda done: client.read_bytes_async(args, done)  # noqa: E731
        elif name == "watch_metrics":
            start = lambda done: client.watch_metrics_async(args, done)  # noqa: E731
        else:
            start = lambda done: client.call_async(op, args, done, data)  # noqa: E731
        try:
            await _await_native(start)
        except Exception as e:  # the official exception classes; kind says which
            if getattr(e, "kind", None) == "invalid_argument":
                return f"{op} {args}: {e}"
        return None

    async def all_replays() -> List[Any]:
        return await asyncio.gather(*(replay(*v) for v in seen.values()))

    problems = [p for p in asyncio.run(all_replays()) if p]
    assert not problems, "\n".join(problems)


OP_NAME = re.compile(
    r"""["']((?:sandbox|manager|commands|code|files|metrics|execution|download|upload|config|credential_vault|pty|isolation)\.[a-z_]+|release)["']"""
)


def test_every_op_named_in_the_sources_was_exercised(recorded):
    named = set()
    for path in SRC.rglob("*.py"):
        named.update(OP_NAME.findall(path.read_text()))
    sent = {NATIVE_AS.get(n, n) for n, _, _ in recorded}
    assert named, "no op names found in the sources"
    unknown = sorted(n for n in named if n not in MANIFEST)
    assert not unknown, f"op names in the sources that the manifest lacks: {unknown}"
    missed = sorted(named - sent)
    assert not missed, f"ops named in the sources but not exercised by this test: {missed}"
