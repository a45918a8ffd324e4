"""Glue between the public classes and ``opensandbox._native``: calls (blocking or
awaitable), error mapping, and folding execution events into models while handlers run.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any, Dict, List, Optional

from opensandbox import _native
from opensandbox.exceptions import (
    InvalidArgumentException,
    SandboxApiException,
    SandboxConnectionException,
    SandboxError,
    SandboxException,
    SandboxInternalException,
    SandboxRateLimitException,
    SandboxReadyTimeoutException,
    SandboxTimeoutException,
)
from opensandbox.models.execd import (
    Execution,
    ExecutionComplete,
    ExecutionError,
    ExecutionInit,
    ExecutionResult,
    OutputMessage,
)

NativeError = _native.NativeError


def map_error(err: BaseException) -> BaseException:
    """A ``NativeError`` as the official exception class; anything else unchanged."""
    if not isinstance(err, NativeError):
        return err
    kind, message, status, code, request_id, operation = err.args
    exc: SandboxException
    if kind == "ready_timeout":
        exc = SandboxReadyTimeoutException(message)
    elif kind == "invalid_argument":
        exc = InvalidArgumentException(message)
    elif kind == "timeout":
        exc = SandboxTimeoutException(message)
    elif kind == "connection":
        exc = SandboxConnectionException(message)
    elif status == 429:
        exc = SandboxRateLimitException(
            message, status_code=429, error=SandboxError(code or SandboxError.RATE_LIMIT, message)
        )
    elif kind in ("api", "not_found", "unauthorized") or status is not None:
        exc = SandboxApiException(
            message,
            status_code=status,
            error=SandboxError(code or SandboxError.UNEXPECTED_RESPONSE, message),
        )
    else:
        exc = SandboxInternalException(
            message, error=SandboxError(code or SandboxError.INTERNAL_UNKNOWN_ERROR, message)
        )
    exc.request_id = request_id
    exc.kind = kind
    exc.operation = operation  # type: ignore[attr-defined]
    exc.__cause__ = None
    return exc


def _resolve(fut: "asyncio.Future[Any]", ok: bool, value: Any) -> None:
    if fut.done():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(map_error(value))


async def _await_native(start: Any) -> Any:
    """Runs ``start(done)`` (which returns a native Task) and awaits ``done``.
    Cancelling the awaiting task aborts the Rust future."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def done(ok: bool, value: Any) -> None:
        try:
            loop.call_soon_threadsafe(_resolve, fut, ok, value)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    task = start(done)
    try:
        return await fut
    except asyncio.CancelledError:
        task.cancel()
        raise


def call(client: Any, op: str, args: Dict[str, Any], blobs: Optional[List[Any]] = None) -> Any:
    """Blocking call (the GIL is released while the core works)."""
    try:
        return client.call(op, json.dumps(args), blobs)
    except NativeError as e:
        raise map_error(e) from None


async def acall(client: Any, op: str, args: Dict[str, Any], blobs: Optional[List[Any]] = None) -> Any:
    """Awaitable call on the core's runtime."""
    payload = json.dumps(args)
    try:
        return await _await_native(lambda done: client.call_async(op, payload, done, blobs))
    except NativeError as e:
        raise map_error(e) from None


def loads(text: Any) -> Any:
    """A JSON result (``None`` stays ``None``)."""
    return None if text is None else json.loads(text)


class _Folder:
    """Builds an :class:`Execution` from event tuples, yielding (handler, argument)."""

    def __init__(self, handlers: Any) -> None:
        self.execution = Execution()
        self.h = handlers
        self.skip = bool(handlers is not None and getattr(handlers, "skip_accumulation", False))

    def fold(self, ev: tuple) -> Any:
        kind = ev[0]
        h = self.h
        ex = self.execution
        if kind == "stdout":
            msg = OutputMessage.model_construct(text=ev[1], timestamp=ev[2], is_error=False)
            if not self.skip:
                ex.logs.stdout.append(msg)
            return (h.on_stdout, msg) if h is not None and h.on_stdout else None
        if kind == "stderr":
            msg = OutputMessage.model_construct(text=ev[1], timestamp=ev[2], is_error=True)
            if not self.skip:
                ex.logs.stderr.append(msg)
            return (h.on_stderr, msg) if h is not None and h.on_stderr else None
        if kind == "init":
            ex.id = ev[1]
            init = ExecutionInit(id=ev[1], timestamp=ev[2])
            return (h.on_init, init) if h is not None and h.on_init else None
        if kind == "result":
            raw = json.loads(ev[3]) if ev[3] else {}
            extra = {
                k: (v if isinstance(v, str) else json.dumps(v))
                for k, v in raw.items()
                if k not in ("text", "text/plain")
            }
            res = ExecutionResult(text=ev[1], timestamp=ev[2], extra_properties=extra)
            ex.result.append(res)
            return (h.on_result, res) if h is not None and h.on_result else None
        if kind == "count":
            ex.execution_count = ev[1]
            return None
        if kind == "error":
            err = ExecutionError(name=ev[1], value=ev[2], timestamp=ev[3], traceback=list(ev[4]))
            ex.error = err
            return (h.on_error, err) if h is not None and h.on_error else None
        if kind == "complete":
            c = ExecutionComplete(timestamp=ev[1], execution_time_in_millis=ev[2])
            ex.complete = c
            return (h.on_execution_complete, c) if h is not None and h.on_execution_complete else None
        return None


def run_execution(stream: Any, handlers: Any) -> Execution:
    """Drains an execution stream on this thread, calling sync handlers in order."""
    folder = _Folder(handlers)
    try:
        while True:
            try:
                msg = stream.next_batch()
            except NativeError as e:
                raise map_error(e) from None
            if msg is None:
                break
            if isinstance(msg, tuple):
                folder.execution.exit_code = msg[1]
                break
            for ev in msg:
                todo = folder.fold(ev)
                if todo is not None:
                    todo[0](todo[1])
    finally:
        stream.close()
    return folder.execution


async def arun_execution(stream: Any, handlers: Any) -> Execution:
    """Drains an execution stream, awaiting async handlers in event order."""
    folder = _Folder(handlers)
    try:
        while True:
            try:
                msg = await _await_native(stream.next_batch_async)
            except NativeError as e:
                raise map_error(e) from None
            if msg is None:
                break
            if isinstance(msg, tuple):
                folder.execution.exit_code = msg[1]
                break
            for ev in msg:
                todo = folder.fold(ev)
                if todo is not None:
                    r = todo[0](todo[1])
                    if inspect.isawaitable(r):
                        await r
    finally:
        stream.close()
    return folder.execution


def secs(td: Any) -> Optional[float]:
    """A timedelta (or number of seconds) as seconds."""
    if td is None:
        return None
    if hasattr(td, "total_seconds"):
        return td.total_seconds()
    return float(td)


def next_item(chunks: Any) -> Any:
    """Next chunk of a download / metrics watch (blocking, GIL released)."""
    try:
        return chunks.next_item()
    except NativeError as e:
        raise map_error(e) from None
