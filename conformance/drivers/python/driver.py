"""Conformance driver of the Python package ``opensandbox`` (conformance/PROTOCOL.md).

Every operation goes through the package's public async API (``Sandbox``,
``SandboxManager``, ``CodeInterpreter``, the services and models), exactly as a user
would write it. stdout carries only protocol lines; logs go to stderr.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import sys
import traceback
from datetime import datetime, timedelta
from typing import Any, Dict, Optional

from code_interpreter import CodeInterpreter
from opensandbox import ConnectionConfig, Sandbox, SandboxManager
from opensandbox.exceptions import (
    InvalidArgumentException,
    SandboxApiException,
    SandboxConnectionException,
    SandboxException,
    SandboxReadyTimeoutException,
    SandboxTimeoutException,
)
from opensandbox.models.execd import ExecutionHandlers, RunCommandOpts
from opensandbox.models.filesystem import (
    ContentReplaceEntry,
    DirectoryListEntry,
    MoveEntry,
    SearchEntry,
    SetPermissionEntry,
    WriteEntry,
)
from opensandbox.models.isolated import CreateIsolatedSessionRequest, IsolatedRunOpts
from opensandbox.models.sandboxes import (
    CredentialProxyConfig,
    NetworkPolicy,
    NetworkRule,
    SandboxFilter,
    SandboxLifecycle,
    SnapshotFilter,
)
from opensandbox.models.templates import CreateTemplateRequest, TemplateFilter
from opensandbox.pool import AcquirePolicy, InMemoryAsyncPoolStateStore, PoolCreationSpec, SandboxPoolAsync

OPS = [
    "sandbox.create",
    "sandbox.connect",
    "sandbox.resume",
    "sandbox.get_info",
    "sandbox.is_healthy",
    "sandbox.renew",
    "sandbox.patch_metadata",
    "sandbox.pause",
    "sandbox.kill",
    "sandbox.get_endpoint",
    "sandbox.get_metrics",
    "sandbox.create_snapshot",
    "sandbox.get_egress_policy",
    "sandbox.patch_egress_rules",
    "sandbox.delete_egress_rules",
    "sandbox.get_diagnostic_logs",
    "sandbox.get_diagnostic_events",
    "manager.list_sandbox_infos",
    "manager.get_sandbox_info",
    "manager.kill_sandbox",
    "manager.pause_sandbox",
    "manager.resume_sandbox",
    "manager.renew_sandbox",
    "manager.patch_sandbox_metadata",
    "manager.get_endpoint",
    "manager.get_snapshot",
    "manager.delete_snapshot",
    "manager.list_snapshots",
    "manager.create_template",
    "manager.get_template",
    "manager.list_templates",
    "manager.delete_template",
    "credential_vault.create",
    "credential_vault.get",
    "credential_vault.patch",
    "credential_vault.delete",
    "credential_vault.list_credentials",
    "credential_vault.get_credential",
    "credential_vault.list_bindings",
    "credential_vault.get_binding",
    "commands.run",
    "commands.start",
    "execution.wait",
    "execution.cancel",
    "commands.interrupt",
    "commands.get_command_status",
    "commands.get_background_command_logs",
    "commands.set_env",
    "commands.create_session",
    "commands.run_in_session",
    "commands.delete_session",
    "code.create_context",
    "code.get_context",
    "code.list_contexts",
    "code.delete_context",
    "code.delete_contexts",
    "code.run",
    "code.start",
    "code.interrupt",
    "files.write_file",
    "files.write_files",
    "files.read_file",
    "files.read_bytes",
    "files.read_bytes_stream",
    "files.get_file_info",
    "files.delete_files",
    "files.delete_directories",
    "files.move_files",
    "files.set_permissions",
    "files.create_directories",
    "files.replace_contents",
    "files.replace_contents_detailed",
    "files.search",
    "files.list_directory",
    "metrics.watch",
    "pty.create",
    "pty.get",
    "pty.delete",
    "pty.attach",
    "pty.write",
    "pty.resize",
    "pty.read",
    "pty.close",
    "commands.follow_background_command_logs",
    "isolation.capabilities",
    "isolation.create",
    "isolation.attach",
    "isolation.get",
    "isolation.list",
    "isolation.delete",
    "isolation.run",
    "isolation.run_background",
    "isolation.run_status",
    "isolation.run_logs",
    "pool.start",
    "pool.snapshot",
    "pool.idle_entries",
    "pool.acquire",
    "pool.resize",
    "pool.release_all_idle",
    "pool.shutdown",
]

# Pool error kinds (PROTOCOL.md §2.11): the SDK's pool exceptions by their error code.
POOL_KINDS = {
    "POOL_EMPTY": "pool_empty",
    "POOL_ACQUIRE_FAILED": "pool_acquire_failed",
    "POOL_STATE_STORE_UNAVAILABLE": "pool_state_store_unavailable",
    "POOL_NOT_RUNNING": "pool_not_running",
    "POOL_DESTROYED": "pool_destroyed",
    "POOL_DESTROY_INCOMPLETE": "pool_destroy_incomplete",
}


class DriverError(Exception):
    """Bad request arguments (reported as driver_error)."""


class RunCancelled(Exception):
    """A run awaited by ``execution.wait`` ended in ``asyncio.CancelledError`` (reported
    as kind ``cancelled``; CancelledError itself is a BaseException)."""


def ts(t: Optional[datetime]) -> Optional[str]:
    return None if t is None else t.isoformat()


def sandbox_info(i: Any) -> Dict[str, Any]:
    return {
        "id": i.id,
        "status": {
            "state": i.status.state,
            "reason": i.status.reason,
            "message": i.status.message,
            "last_transition_at": ts(i.status.last_transition_at),
        },
        "entrypoint": i.entrypoint,
        "expires_at": ts(i.expires_at),
        "created_at": ts(i.created_at),
        "image": None if i.image is None else {"uri": i.image.image},
        "snapshot_id": i.snapshot_id,
        "metadata": i.metadata or {},
    }


def snapshot(s: Any) -> Dict[str, Any]:
    return {
        "id": s.id,
        "sandbox_id": s.sandbox_id,
        "name": s.name,
        "status": {"state": s.status.state, "reason": s.status.reason, "message": s.status.message},
        "created_at": ts(s.created_at),
    }


def template_info(t: Any) -> Dict[str, Any]:
    out = t.model_dump()
    out["created_at"] = ts(t.created_at)
    out["updated_at"] = ts(t.updated_at)
    return out


def credential_meta(c: Any) -> Dict[str, Any]:
    return {"name": c.name, "source_type": c.source_type, "revision": c.revision}


def binding_meta(b: Any) -> Dict[str, Any]:
    return {
        "name": b.name,
        "revision": b.revision,
        "match": None
        if b.match is None
        else {"hosts": b.match.hosts, "schemes": b.match.schemes, "methods": b.match.methods, "paths": b.match.paths},
        "auth": None if b.auth is None else {"type": b.auth.type, "name": b.auth.name},
    }


def vault_state(v: Any) -> Dict[str, Any]:
    return {
        "revision": v.revision,
        "credentials": [credential_meta(c) for c in v.credentials],
        "bindings": [binding_meta(b) for b in v.bindings],
    }


def entry(e: Any) -> Dict[str, Any]:
    return {
        "path": e.path,
        "type": e.entry_type,
        "mode": e.mode,
        "owner": e.owner,
        "group": e.group,
        "size": e.size,
        "modified_at": ts(e.modified_at),
        "created_at": ts(e.created_at),
    }


def metrics(m: Any) -> Dict[str, Any]:
    return m.model_dump()


def execution(ex: Any, extra: Dict[str, Any]) -> Dict[str, Any]:
    out = {
        "id": ex.id,
        "exit_code": ex.exit_code,
        "stdout": [m.text for m in ex.logs.stdout],
        "stderr": [m.text for m in ex.logs.stderr],
        "results": [{"text": r.text} for r in ex.result],
        "error": None
        if ex.error is None
        else {"name": ex.error.name, "value": ex.error.value, "traceback": ex.error.traceback},
        "complete": None if ex.complete is None else {"execution_time_ms": ex.complete.execution_time_in_millis},
        "execution_count": ex.execution_count,
    }
    out.update(extra)
    return out


class Recorder:
    """Handlers that record callbacks in order, hash stdout, and signal init.
    ``skip`` (the request's ``skip_accumulation``) sets the handlers' own option."""

    def __init__(
        self, record: bool, digest: bool, on_init: Optional[asyncio.Future] = None, skip: bool = False
    ) -> None:
        self.events = [] if record else None
        self.hasher = hashlib.sha256() if digest else None
        self.bytes = 0
        self.lines = 0
        self.init = on_init
        self.skip = skip or digest

    def handlers(self) -> Optional[ExecutionHandlers]:
        if self.events is None and self.hasher is None and self.init is None:
            # No callbacks: the option alone, as a user keeping no output would write it.
            return ExecutionHandlers(skip_accumulation=True) if self.skip else None
        return ExecutionHandlers(
            on_init=self.on_init,
            on_stdout=self.on_stdout,
            on_stderr=self.on_stderr,
            on_result=self.on_result,
            on_error=self.on_error,
            on_execution_complete=self.on_complete,
            skip_accumulation=self.skip,
        )

    def push(self, ev: Dict[str, Any]) -> None:
        if self.events is not None:
            self.events.append(ev)

    async def on_init(self, init: Any) -> None:
        if self.init is not None and not self.init.done():
            self.init.set_result(init.id)
        self.push({"type": "init", "id": init.id})

    async def on_stdout(self, msg: Any) -> None:
        if self.hasher is not None:
            # The output's bytes whatever the framing: a line-framed text gets its
            # newline back, a kept one already ends with it.
            data = msg.text.encode()
            if not data.endswith(b"\n"):
                data += b"\n"
            self.hasher.update(data)
            self.bytes += len(data)
            self.lines += data.count(b"\n")
        self.push({"type": "stdout", "text": msg.text})

    async def on_stderr(self, msg: Any) -> None:
        self.push({"type": "stderr", "text": msg.text})

    async def on_result(self, r: Any) -> None:
        self.push({"type": "result", "text": r.text})

    async def on_error(self, e: Any) -> None:
        self.push({"type": "error", "name": e.name, "value": e.value})

    async def on_complete(self, c: Any) -> None:
        self.push({"type": "execution_complete"})

    def extra(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        if self.events is not None:
            out["events"] = self.events
        if self.hasher is not None:
            out["stdout"] = []
            out["stdout_digest"] = {"sha256": self.hasher.hexdigest(), "bytes": self.bytes, "lines": self.lines}
        return out


class Generated(io.RawIOBase):
    """``text`` repeated ``times`` times, as a readable stream (never one buffer)."""

    def __init__(self, text: str, times: int) -> None:
        self.unit = text.encode()
        self.left = times
        self.per = max(1, (256 * 1024) // max(1, len(self.unit)))

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0 or not self.unit:
            return b""
        k = min(self.left, self.per)
        self.left -= k
        return self.unit * k


class Driver:
    def __init__(self) -> None:
        self.base = ConnectionConfig()
        self.sandboxes: Dict[str, Sandbox] = {}
        self.interpreters: Dict[str, CodeInterpreter] = {}
        self.runs: Dict[str, asyncio.Task] = {}
        self.ptys: Dict[str, Any] = {}
        self.pools: Dict[str, SandboxPoolAsync] = {}
        self.redis_clients: list = []
        self.next = 0

    def config(self, args: Dict[str, Any]) -> ConnectionConfig:
        conn = args.get("connection")
        if not conn:
            return self.base
        fields: Dict[str, Any] = {}
        if "domain" in conn:
            fields["domain"] = conn["domain"]
        if "api_key" in conn:
            fields["api_key"] = conn["api_key"] if conn["api_key"] is not None else ""
        if conn.get("headers"):
            fields["headers"] = conn["headers"]
        if conn.get("request_timeout_s") is not None:
            fields["request_timeout"] = timedelta(seconds=conn["request_timeout_s"])
        if "use_server_proxy" in conn:
            fields["use_server_proxy"] = bool(conn["use_server_proxy"])
        return ConnectionConfig(**fields)

    async def sandbox(self, args: Dict[str, Any]) -> Sandbox:
        sid = args.get("sandbox")
        if not isinstance(sid, str):
            raise DriverError("argument sandbox is required")
        if args.get("connection"):
            return await Sandbox.connect(sid, connection_config=self.config(args), skip_health_check=True)
        if sid not in self.sandboxes:
            self.sandboxes[sid] = await Sandbox.connect(sid, skip_health_check=True)
        return self.sandboxes[sid]

    async def interpreter(self, args: Dict[str, Any]) -> CodeInterpreter:
        sb = await self.sandbox(args)
        if sb.id not in self.interpreters:
            self.interpreters[sb.id] = await CodeInterpreter.create(sb, skip_health_check=True)
        return self.interpreters[sb.id]

    def manager(self, args: Dict[str, Any]) -> SandboxManager:
        return SandboxManager(self.config(args))

    def keep(self, args: Dict[str, Any], sb: Sandbox) -> Dict[str, Any]:
        if not args.get("connection"):
            self.sandboxes[sb.id] = sb
        return {"id": sb.id}

    async def start(self, coro_factory: Any) -> Dict[str, Any]:
        loop = asyncio.get_running_loop()
        init: asyncio.Future = loop.create_future()
        task = asyncio.ensure_future(coro_factory(init))
        done, _ = await asyncio.wait({init, task}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        if init in done:
            self.next += 1
            handle = f"run-{self.next}"
            self.runs[handle] = task
            return {"handle": handle, "id": init.result()}
        if task in done:
            task.result()
            raise DriverError("the run ended without an init event")
        task.cancel()
        raise DriverError("no init event within 30 s")

    async def pty(self, name: str, a: Dict[str, Any]) -> Any:
        """PTY ops (PROTOCOL.md §2.8) over ``sandbox.pty``."""
        if name in ("write", "resize", "read", "close"):
            conn = self.ptys.get(a.get("handle"))
            if conn is None:
                raise DriverError(f"unknown pty handle {a.get('handle')!r}")
            if name == "write":
                await conn.write(a["text"])
                return None
            if name == "resize":
                await conn.resize(int(a["cols"]), int(a["rows"]))
                return None
            if name == "close":
                del self.ptys[a["handle"]]
                return {"next_offset": await conn.close()}
            wait = a.get("wait_ms")
            timeout = None if wait is None else wait / 1000
            if a.get("until") is not None:
                r = await conn.read(until=a["until"], timeout=timeout)
            elif a.get("until_exit"):
                r = await conn.read(until_exit=True, timeout=timeout)
            else:
                r = await conn.read(timeout=timeout)
            return {
                "output": r.text,
                "channel": r.channel,
                "offset": r.offset,
                "next_offset": r.next_offset,
                "exit_code": r.exit_code,
                "closed": r.closed,
                "close_code": r.close_code,
                "timed_out": r.timed_out,
                "done": r.done,
            }
        sb = await self.sandbox(a)
        if name == "create":
            return {"session_id": await sb.pty.create_session(cwd=a.get("cwd"), command=a.get("command"))}
        if name == "get":
            st = await sb.pty.get_session(a["session_id"])
            return {"session_id": st.session_id, "running": st.running, "output_offset": st.output_offset}
        if name == "delete":
            await sb.pty.delete_session(a["session_id"])
            return None
        if name == "attach":
            conn = await sb.pty.attach(
                a["session_id"], since=a.get("since"), mode=a.get("mode") or "pty", takeover=bool(a.get("takeover"))
            )
            self.next += 1
            handle = f"pty-{self.next}"
            self.ptys[handle] = conn
            return {"handle": handle, "mode": conn.mode}
        raise NotImplementedError(name)

    async def follow_logs(self, a: Dict[str, Any]) -> Any:
        """``commands.follow_background_command_logs`` over ``sandbox.pty.follow_logs``."""
        sb = await self.sandbox(a)
        start = int(a.get("cursor") or 0)
        limit = a.get("max_bytes")
        content = bytearray()
        first: Optional[int] = None
        expected, contiguous, chunks, ended = start, True, 0, True
        follow = sb.pty.follow_logs(a["id"], cursor=start)
        async for chunk in follow:
            chunks += 1
            first = chunk.offset if first is None else first
            contiguous = contiguous and chunk.offset == expected
            expected = chunk.offset + len(chunk.data)
            content += chunk.data
            if limit is not None and len(content) >= limit:
                ended = False
                break
        await follow.aclose()
        return {
            "content": content.decode("utf-8", "replace"),
            "first_offset": first,
            "cursor": expected,
            "chunks": chunks,
            "contiguous": contiguous,
            "ended": ended,
        }

    async def pool_op(self, name: str, a: Dict[str, Any]) -> Any:
        """Pool ops (PROTOCOL.md §2.11) over ``opensandbox.pool.SandboxPoolAsync``."""
        pool_name = a.get("pool_name")
        if not isinstance(pool_name, str):
            raise DriverError("argument pool_name is required")
        if name == "start":
            old = self.pools.pop(pool_name, None)
            if old is not None:
                await old.shutdown(graceful=False)
            if a.get("store", "memory") == "redis":
                import redis.asyncio
                from opensandbox.pool_redis import AsyncRedisPoolStateStore

                client = redis.asyncio.Redis.from_url(a["redis_url"])
                self.redis_clients.append(client)
                store: Any = AsyncRedisPoolStateStore(
                    client, **({"key_prefix": a["key_prefix"]} if a.get("key_prefix") else {})
                )
            elif a.get("store", "memory") == "memory":
                store = InMemoryAsyncPoolStateStore()
            else:
                raise DriverError(f"unknown store {a.get('store')!r}")
            options: Dict[str, Any] = {}
            if a.get("idle_timeout_s") is not None:
                options["idle_timeout"] = timedelta(seconds=a["idle_timeout_s"])
            if a.get("primary_lock_ttl_s") is not None:
                options["primary_lock_ttl"] = timedelta(seconds=a["primary_lock_ttl_s"])
            if a.get("owner_id"):
                options["owner_id"] = a["owner_id"]
            # reconcile_interval_s: the Python pool (as the official one) ticks every second,
            # with no option to change it.
            pool = SandboxPoolAsync(
                pool_name=pool_name,
                max_idle=int(a["max_idle"]),
                state_store=store,
                connection_config=self.base,
                creation_spec=PoolCreationSpec(image=a.get("image") or "python:3.11", metadata=a.get("metadata")),
                **options,
            )
            await pool.start()
            self.pools[pool_name] = pool
            return {"pool_name": pool_name}
        pool = self.pools.get(pool_name)
        if pool is None:
            raise DriverError(f"no pool {pool_name!r} was started in this driver")
        if name == "snapshot":
            snap = await pool.snapshot()
            return {
                "lifecycle_state": snap.lifecycle_state.value,
                "state": snap.state.value,
                "idle_count": snap.idle_count,
                "max_idle": snap.max_idle,
            }
        if name == "idle_entries":
            return [
                {"sandbox_id": e.sandbox_id, "expires_at": ts(e.expires_at)} for e in await pool.snapshot_idle_entries()
            ]
        if name == "acquire":
            timeout = a.get("sandbox_timeout_s")
            sb = await pool.acquire(
                sandbox_timeout=None if timeout is None else timedelta(seconds=timeout),
                policy=AcquirePolicy[a.get("policy") or "DIRECT_CREATE"],
            )
            self.sandboxes[sb.id] = sb
            return {"id": sb.id}
        if name == "resize":
            await pool.resize(int(a["max_idle"]))
            return None
        if name == "release_all_idle":
            return {"count": await pool.release_all_idle()}
        if name == "shutdown":
            await pool.shutdown(graceful=a.get("graceful", True))
            return None
        raise NotImplementedError(f"pool.{name}")

    async def close(self) -> None:
        for pool in self.pools.values():
            await pool.shutdown(graceful=False)
        for client in self.redis_clients:
            await client.aclose()

    async def dispatch(self, op: str, a: Dict[str, Any]) -> Any:
        if op.startswith("pool."):
            return await self.pool_op(op[5:], a)
        if op.startswith("pty."):
            return await self.pty(op[4:], a)
        if op == "commands.follow_background_command_logs":
            return await self.follow_logs(a)
        if op == "sandbox.create":
            policy = None
            if a.get("network_policy"):
                p = a["network_policy"]
                policy = NetworkPolicy(
                    default_action=p.get("default_action"), egress=[NetworkRule(**r) for r in p.get("egress") or []]
                )
            kw: Dict[str, Any] = {}
            if "timeout_s" in a:
                kw["timeout"] = None if a["timeout_s"] is None else timedelta(seconds=a["timeout_s"])
            if a.get("ready_timeout_s") is not None:
                kw["ready_timeout"] = timedelta(seconds=a["ready_timeout_s"])
            if a.get("template_id") is not None:
                timeout = kw.pop("timeout", timedelta(minutes=10))
                sb = await Sandbox.create_from_template(
                    a["template_id"],
                    timeout=timeout,
                    metadata=a.get("metadata"),
                    network_policy=policy,
                    extensions=a.get("extensions"),
                    connection_config=self.config(a),
                    skip_health_check=bool(a.get("skip_health_check")),
                    **kw,
                )
                return self.keep(a, sb)
            for k in ("env", "metadata", "resource", "extensions", "entrypoint", "snapshot_id", "volumes"):
                if a.get(k) is not None:
                    kw[k] = a[k]
            if a.get("credential_proxy") is not None:
                kw["credential_proxy"] = CredentialProxyConfig(**a["credential_proxy"])
            if a.get("lifecycle") is not None:
                lc = a["lifecycle"]
                kw["lifecycle"] = SandboxLifecycle(
                    pre_start=lc.get("pre_start"),
                    periodic=[dict(p) for p in lc.get("periodic") or []] or None,
                )
            sb = await Sandbox.create(
                a.get("image"),
                network_policy=policy,
                connection_config=self.config(a),
                skip_health_check=bool(a.get("skip_health_check")),
                **kw,
            )
            return self.keep(a, sb)
        if op in ("sandbox.connect", "sandbox.resume"):
            key = "connect_timeout" if op == "sandbox.connect" else "resume_timeout"
            kw = {}
            if a.get(key + "_s") is not None:
                kw[key] = timedelta(seconds=a[key + "_s"])
            fn = Sandbox.connect if op == "sandbox.connect" else Sandbox.resume
            sb = await fn(
                a["sandbox_id"],
                connection_config=self.config(a),
                skip_health_check=bool(a.get("skip_health_check")),
                **kw,
            )
            return self.keep(a, sb)
        if op.startswith("sandbox."):
            sb = await self.sandbox(a)
            name = op.split(".", 1)[1]
            if name == "get_info":
                return sandbox_info(await sb.get_info())
            if name == "is_healthy":
                return {"healthy": await sb.is_healthy()}
            if name == "renew":
                r = await sb.renew(timedelta(seconds=a["seconds"]))
                return {"expires_at": ts(r.expires_at)}
            if name == "patch_metadata":
                return sandbox_info(await sb.patch_metadata(a.get("patch") or {}))
            if name == "pause":
                await sb.pause()
                return None
            if name == "kill":
                await sb.kill()
                self.sandboxes.pop(sb.id, None)
                return None
            if name == "get_endpoint":
                e = await sb.get_endpoint(a["port"])
                return {"endpoint": e.endpoint, "headers": e.headers}
            if name == "get_metrics":
                return metrics(await sb.get_metrics())
            if name == "create_snapshot":
                return snapshot(await sb.create_snapshot(a.get("name")))
            if name == "get_egress_policy":
                p = await sb.get_egress_policy()
                return {
                    "default_action": p.default_action,
                    "egress": [{"action": r.action, "target": r.target} for r in p.egress or []],
                }
            if name == "patch_egress_rules":
                await sb.patch_egress_rules([NetworkRule(**r) for r in a.get("rules") or []])
                return None
            if name == "delete_egress_rules":
                await sb.delete_egress_rules(a.get("targets") or [])
                return None
            if name in ("get_diagnostic_logs", "get_diagnostic_events"):
                d = await getattr(sb, name)(a["scope"])
                out = d.model_dump()
                out["expires_at"] = ts(d.expires_at)
                return out
        if op.startswith("manager."):
            m = self.manager(a)
            name = op.split(".", 1)[1]
            if name == "list_sandbox_infos":
                page = await m.list_sandbox_infos(
                    SandboxFilter(
                        states=a.get("states"),
                        metadata=a.get("metadata"),
                        page=a.get("page"),
                        page_size=a.get("page_size"),
                    )
                )
                return {
                    "sandbox_infos": [sandbox_info(i) for i in page.sandbox_infos],
                    "pagination": page.pagination.model_dump(),
                }
            if name == "get_sandbox_info":
                return sandbox_info(await m.get_sandbox_info(a["sandbox_id"]))
            if name in ("kill_sandbox", "pause_sandbox", "resume_sandbox"):
                await getattr(m, name)(a["sandbox_id"])
                if name == "kill_sandbox":
                    self.sandboxes.pop(a["sandbox_id"], None)
                return None
            if name == "renew_sandbox":
                r = await m.renew_sandbox(a["sandbox_id"], timedelta(seconds=a["seconds"]))
                return {"expires_at": ts(r.expires_at)}
            if name == "patch_sandbox_metadata":
                return sandbox_info(await m.patch_sandbox_metadata(a["sandbox_id"], a.get("patch") or {}))
            if name == "get_endpoint":
                sb = await Sandbox.connect(a["sandbox_id"], connection_config=self.config(a), skip_health_check=True)
                e = await sb.get_endpoint(a["port"])
                return {"endpoint": e.endpoint, "headers": e.headers}
            if name == "get_snapshot":
                return snapshot(await m.get_snapshot(a["snapshot_id"]))
            if name == "delete_snapshot":
                await m.delete_snapshot(a["snapshot_id"])
                return None
            if name == "create_template":
                req = {k: v for k, v in a.items() if k not in ("connection", "manager")}
                if req.get("readiness") is not None:
                    req["readiness"] = {
                        "probe": req["readiness"].get("probe"),
                        "warmupSeconds": req["readiness"].get("warmup_seconds"),
                    }
                return template_info(await m.create_template(CreateTemplateRequest(**req)))
            if name == "get_template":
                return template_info(await m.get_template(a["template_id"]))
            if name == "list_templates":
                page = await m.list_templates(
                    TemplateFilter(metadata=a.get("metadata"), page=a.get("page"), page_size=a.get("page_size"))
                )
                return {
                    "template_infos": [template_info(t) for t in page.template_infos],
                    "pagination": page.pagination.model_dump(),
                }
            if name == "delete_template":
                await m.delete_template(a["template_id"])
                return None
            if name == "list_snapshots":
                page = await m.list_snapshots(
                    SnapshotFilter(
                        sandbox_id=a.get("sandbox_id"),
                        states=a.get("states"),
                        page=a.get("page"),
                        page_size=a.get("page_size"),
                    )
                )
                return {
                    "snapshot_infos": [snapshot(s) for s in page.snapshot_infos],
                    "pagination": page.pagination.model_dump(),
                }
        if op.startswith("credential_vault."):
            vault = (await self.sandbox(a)).credential_vault
            name = op.split(".", 1)[1]
            if name == "create":
                return vault_state(
                    await vault.create(credentials=a.get("credentials") or [], bindings=a.get("bindings") or [])
                )
            if name == "get":
                return vault_state(await vault.get())
            if name == "patch":
                return vault_state(
                    await vault.patch(
                        expected_revision=a.get("expected_revision"),
                        credentials=a.get("credentials"),
                        bindings=a.get("bindings"),
                    )
                )
            if name == "delete":
                await vault.delete()
                return None
            if name == "list_credentials":
                return [credential_meta(c) for c in await vault.list_credentials()]
            if name == "get_credential":
                return credential_meta(await vault.get_credential(a["name"]))
            if name == "list_bindings":
                return [binding_meta(b) for b in await vault.list_bindings()]
            if name == "get_binding":
                return binding_meta(await vault.get_binding(a["name"]))
        if op in ("commands.run", "commands.start"):
            sb = await self.sandbox(a)
            opts = RunCommandOpts(
                background=bool(a.get("background")),
                working_directory=a.get("working_directory"),
                timeout=None if a.get("timeout_ms") is None else timedelta(milliseconds=a["timeout_ms"]),
                uid=a.get("uid"),
                gid=a.get("gid"),
                envs=a.get("envs"),
            )
            if op == "commands.run":
                rec = Recorder(bool(a.get("handlers")), bool(a.get("digest")), skip=bool(a.get("skip_accumulation")))
                ex = await sb.commands.run(a["command"], opts=opts, handlers=rec.handlers())
                return execution(ex, rec.extra())

            async def run(init: asyncio.Future) -> Any:
                rec = Recorder(bool(a.get("handlers")), False, init, skip=bool(a.get("skip_accumulation")))
                ex = await sb.commands.run(a["command"], opts=opts, handlers=rec.handlers())
                return execution(ex, rec.extra())

            return await self.start(run)
        if op == "execution.wait":
            task = self.runs.pop(a.get("handle"), None)
            if task is None:
                raise DriverError(f"no run with handle {a.get('handle')}")
            try:
                return await task
            except asyncio.CancelledError:
                if task.cancelled():
                    raise RunCancelled("the run was cancelled") from None
                raise
        if op == "execution.cancel":
            # Python's own cancellation: cancelling the task that awaits the run.
            task = self.runs.get(a.get("handle"))
            if task is None:
                raise DriverError(f"no run with handle {a.get('handle')}")
            task.cancel()
            return None
        if op.startswith("commands."):
            sb = await self.sandbox(a)
            name = op.split(".", 1)[1]
            if name == "interrupt":
                await sb.commands.interrupt(a["id"])
                return None
            if name == "set_env":
                await sb.commands.set_env(a["key"], a["value"])
                return None
            if name == "get_command_status":
                s = await sb.commands.get_command_status(a["id"])
                return {
                    "id": s.id,
                    "content": s.content,
                    "running": s.running,
                    "exit_code": s.exit_code,
                    "error": s.error,
                    "started_at": s.started_at,
                    "finished_at": s.finished_at,
                }
            if name == "get_background_command_logs":
                logs = await sb.commands.get_background_command_logs(a["id"], a.get("cursor"))
                return {"content": logs.content, "cursor": logs.cursor}
            if name == "create_session":
                return {"session_id": await sb.commands.create_session(working_directory=a.get("working_directory"))}
            if name == "run_in_session":
                rec = Recorder(bool(a.get("handlers")), False, skip=bool(a.get("skip_accumulation")))
                ex = await sb.commands.run_in_session(
                    a["session_id"],
                    a["command"],
                    working_directory=a.get("working_directory"),
                    timeout=None if a.get("timeout_ms") is None else timedelta(milliseconds=a["timeout_ms"]),
                    handlers=rec.handlers(),
                )
                return execution(ex, rec.extra())
            if name == "delete_session":
                await sb.commands.delete_session(a["session_id"])
                return None
        if op.startswith("code."):
            ci = await self.interpreter(a)
            name = op.split(".", 1)[1]
            if name == "create_context":
                c = await ci.codes.create_context(a["language"])
                return {"id": c.id, "language": c.language}
            if name == "get_context":
                c = await ci.codes.get_context(a["context_id"])
                return {"id": c.id, "language": c.language}
            if name == "list_contexts":
                return [{"id": c.id, "language": c.language} for c in await ci.codes.list_contexts(a.get("language"))]
            if name == "delete_context":
                await ci.codes.delete_context(a["context_id"])
                return None
            if name == "delete_contexts":
                await ci.codes.delete_contexts(a["language"])
                return None
            if name == "interrupt":
                await ci.codes.interrupt(a["id"])
                return None
            if name in ("run", "start"):
                ctx = None
                if a.get("context_id"):
                    ctx = await ci.codes.get_context(a["context_id"])
                lang = None if ctx is not None else a.get("language")
                if name == "run":
                    rec = Recorder(bool(a.get("handlers")), False, skip=bool(a.get("skip_accumulation")))
                    ex = await ci.codes.run(a["code"], language=lang, context=ctx, handlers=rec.handlers())
                    return execution(ex, rec.extra())

                async def run_code(init: asyncio.Future) -> Any:
                    rec = Recorder(bool(a.get("handlers")), False, init, skip=bool(a.get("skip_accumulation")))
                    ex = await ci.codes.run(a["code"], language=lang, context=ctx, handlers=rec.handlers())
                    return execution(ex, rec.extra())

                return await self.start(run_code)
        if op.startswith("isolation."):
            sb = await self.sandbox(a)
            name = op.split(".", 1)[1]
            iso = sb.isolation
            if name == "capabilities":
                return (await iso.capabilities()).model_dump(mode="json")
            if name == "create":
                fields = {k: v for k, v in a.items() if k not in ("sandbox", "connection")}
                session = await iso.create(CreateIsolatedSessionRequest(**fields))
                return session.info.model_dump(mode="json")
            if name == "list":
                return [x.model_dump(mode="json") for x in await iso.list()]
            # A handle from the id alone, as a stateless caller holds one.
            handle = await iso.attach(a["session_id"])
            if name == "attach":
                return handle.info.model_dump(mode="json")
            if name == "get":
                return (await handle.get()).model_dump(mode="json")
            if name == "delete":
                await handle.delete()
                return None
            opts = IsolatedRunOpts(envs=a.get("envs"), timeout_seconds=a.get("timeout_s"))
            if name == "run":
                rec = Recorder(bool(a.get("handlers")), False, skip=bool(a.get("skip_accumulation")))
                ex = await handle.run(a["code"], opts=opts, handlers=rec.handlers())
                return execution(ex, rec.extra())
            if name == "run_background":
                return (await handle.run_background(a["code"], opts=opts)).model_dump(mode="json")
            if name == "run_status":
                return (await handle.run_status(a["run_id"])).model_dump(mode="json")
            if name == "run_logs":
                return (await handle.run_logs(a["run_id"], a.get("cursor") or 0)).model_dump(mode="json")
        if op.startswith("files.") or op == "metrics.watch":
            sb = await self.sandbox(a)
            f = sb.files
            if a.get("identity") is not None:
                f = sb.files_with_identity(a["identity"]["uid"], a["identity"]["gid"])
            elif a.get("isolated_session") is not None:
                f = (await sb.isolation.attach(a["isolated_session"])).files
            name = op.split(".", 1)[1]
            if name in ("write_file", "write_files"):
                items = a.get("entries") or [] if name == "write_files" else [a]
                entries = []
                for e in items:
                    if e.get("data_gen"):
                        data: Any = Generated(e["data_gen"]["text"], int(e["data_gen"]["times"]))
                    elif e.get("data_b64") is not None:
                        data = base64.b64decode(e["data_b64"])
                    else:
                        data = e.get("data") or ""
                    kw = {k: e[k] for k in ("mode", "owner", "group") if e.get(k) is not None}
                    entries.append(WriteEntry(path=e["path"], data=data, **kw))
                if name == "write_file":
                    w = entries[0]
                    await f.write_file(w.path, w.data, mode=w.mode, owner=w.owner, group=w.group)
                else:
                    await f.write_files(entries)
                return None
            rk = {"range_header": a.get("range"), "offset": a.get("offset"), "limit": a.get("limit")}
            if name == "read_file":
                return {"text": await f.read_file(a["path"], **rk)}
            if name == "read_bytes":
                data = await f.read_bytes(a["path"], **rk)
                return {
                    "data_b64": base64.b64encode(data).decode(),
                    "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
            if name == "read_bytes_stream":
                h = hashlib.sha256()
                size = 0
                async for chunk in await f.read_bytes_stream(a["path"], **rk):
                    h.update(chunk)
                    size += len(chunk)
                return {"size": size, "sha256": h.hexdigest()}
            if name == "get_file_info":
                return {k: entry(v) for k, v in (await f.get_file_info(a.get("paths") or [])).items()}
            if name == "delete_files":
                await f.delete_files(a.get("paths") or [])
                return None
            if name == "delete_directories":
                await f.delete_directories(a.get("paths") or [])
                return None
            if name == "move_files":
                await f.move_files([MoveEntry(**e) for e in a.get("entries") or []])
                return None
            if name in ("set_permissions", "create_directories"):
                entries = []
                for e in a.get("entries") or []:
                    kw = {k: e[k] for k in ("mode", "owner", "group") if e.get(k) is not None}
                    cls = SetPermissionEntry if name == "set_permissions" else WriteEntry
                    entries.append(cls(path=e["path"], **kw))
                await getattr(f, name)(entries)
                return None
            if name == "replace_contents":
                await f.replace_contents([ContentReplaceEntry(**e) for e in a.get("entries") or []])
                return None
            if name == "replace_contents_detailed":
                res = await f.replace_contents_detailed([ContentReplaceEntry(**e) for e in a.get("entries") or []])
                return [{"path": r.path, "replaced_count": r.replaced_count} for r in res]
            if name == "search":
                found = await f.search(SearchEntry(path=a["path"], pattern=a.get("pattern") or "*"))
                return [entry(e) for e in found]
            if name == "list_directory":
                return [
                    entry(e) for e in await f.list_directory(DirectoryListEntry(path=a["path"], depth=a.get("depth")))
                ]
            if name == "watch":
                out = []
                async for m in sb.metrics.watch_metrics():
                    out.append(metrics(m))
                    if len(out) >= int(a["count"]):
                        break
                return out
        raise NotImplementedError(op)


def error_json(exc: BaseException, op: str) -> Dict[str, Any]:
    if isinstance(exc, RunCancelled):
        return {"kind": "cancelled", "message": str(exc)}
    if isinstance(exc, NotImplementedError):
        return {"kind": "unsupported_op", "message": f"the python driver does not implement {op}"}
    if isinstance(exc, (DriverError, KeyError, TypeError, ValueError)) and not isinstance(exc, SandboxException):
        return {"kind": "driver_error", "message": f"{type(exc).__name__}: {exc}"}
    if isinstance(exc, SandboxException):
        kind = getattr(exc, "kind", None)
        if kind is None and exc.error is not None:
            kind = POOL_KINDS.get(exc.error.code)
        if kind is None:
            if isinstance(exc, SandboxReadyTimeoutException):
                kind = "ready_timeout"
            elif isinstance(exc, InvalidArgumentException):
                kind = "invalid_argument"
            elif isinstance(exc, SandboxTimeoutException):
                kind = "timeout"
            elif isinstance(exc, SandboxConnectionException):
                kind = "connection"
            elif isinstance(exc, SandboxApiException):
                kind = {404: "not_found", 401: "unauthorized"}.get(exc.status_code or 0, "api")
            else:
                kind = "internal"
        status = getattr(exc, "status_code", None)
        code = (
            exc.error.code
            if exc.error is not None and (isinstance(exc, SandboxApiException) or kind in POOL_KINDS.values())
            else None
        )
        return {
            "kind": kind,
            "status": status,
            "code": code,
            "request_id": exc.request_id,
            "message": exc.args[0] if exc.args else str(exc),
        }
    return {"kind": "driver_error", "message": f"{type(exc).__name__}: {exc}"}


def write(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main() -> None:
    import opensandbox

    write(
        {
            "hello": "opensandbox-conformance",
            "protocol": 1,
            "language": "python",
            "sdk": "opensandbox",
            "sdk_version": opensandbox.__version__,
            "ops": OPS,
        }
    )
    driver = Driver()
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            write({"id": None, "ok": False, "error": {"kind": "driver_error", "message": f"request is not JSON: {e}"}})
            continue
        rid, op, args = req.get("id"), req.get("op", ""), req.get("args") or {}
        try:
            result = await driver.dispatch(op, args)
            write({"id": rid, "ok": True, "result": result})
        except Exception as exc:  # every failure becomes a response, never a crash
            if not isinstance(exc, SandboxException):
                traceback.print_exc(file=sys.stderr)
            write({"id": rid, "ok": False, "error": error_json(exc, op)})
    await driver.close()


if __name__ == "__main__":
    asyncio.run(main())
