"""Glue between the public classes and ``opensandbox._native``: op-layer calls
(blocking or awaitable), error mapping, and runs: events pulled in batches for the
handlers, the Execution read from the run's final ``end`` item (folded by the core).
"""

from __future__ import annotations

import inspect
import json
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    import asyncio

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
    exc.operation = operation
    exc.__cause__ = None
    return exc


def _resolve(fut: "asyncio.Future[Any]", ok: bool, value: Any, orphan: Any = None) -> None:
    if fut.done():
        # Cancelled after the op had finished: nobody takes the result any more.
        if ok and orphan is not None:
            orphan(value)
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(map_error(value))


async def _await_native(start: Any, orphan: Any = None) -> Any:
    """Runs ``start(done)`` (which returns a native Task) and awaits ``done``.
    Cancelling the awaiting task aborts the Rust future; a result that had already
    been sent when the task was cancelled goes to ``orphan`` (when given)."""
    # asyncio (with ssl, socket and logging) is imported by the first async call, not by
    # `import opensandbox`: a blocking program never needs it (about a third of the
    # import's instructions). Later calls find it in sys.modules.
    import asyncio

    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def done(ok: bool, value: Any) -> None:
        try:
            loop.call_soon_threadsafe(_resolve, fut, ok, value, orphan)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    task = start(done)
    try:
        return await fut
    except asyncio.CancelledError:
        task.cancel()
        raise


def call(client: Any, op: str, args: Dict[str, Any], blobs: Optional[List[Any]] = None) -> Any:
    """Blocking call of an op-layer op (the GIL is released while the core works)."""
    try:
        return client.call(op, args, blobs)
    except NativeError as e:
        raise map_error(e) from None


async def acall(client: Any, op: str, args: Dict[str, Any], blobs: Optional[List[Any]] = None) -> Any:
    """Awaitable call of an op-layer op on the core's runtime."""
    try:
        return await _await_native(
            lambda done: client.call_async(op, args, done, blobs), lambda v: _release_orphan(client, v)
        )
    except NativeError as e:
        raise map_error(e) from None


def _release_orphan(client: Any, value: Any) -> None:
    """Releases the handle in the result of an op whose awaiting task was cancelled
    after the op had finished (a started run, an open download or upload): otherwise
    nobody could ever release it, and a started run's command would keep running."""
    if isinstance(value, dict) and isinstance(value.get("handle"), int):
        try:
            client.call("release", {"handle": value["handle"]}, None)
        except NativeError:
            pass


def native(fn: Any, *args: Any) -> Any:
    """A blocking native method (``read_bytes``, ``read_chunks``, ...), errors mapped."""
    try:
        return fn(*args)
    except NativeError as e:
        raise map_error(e) from None


async def anative(fn: Any, *args: Any) -> Any:
    """An ``*_async`` native method awaited, errors mapped."""
    try:
        return await _await_native(lambda done: fn(*args, done))
    except NativeError as e:
        raise map_error(e) from None


# Most events pulled per ``execution.next_batch``.
_BATCH = 4096


def _wants_events(handlers: Any) -> bool:
    if handlers is None:
        return False
    return any(
        getattr(handlers, n, None) is not None
        for n in ("on_stdout", "on_stderr", "on_result", "on_execution_complete", "on_error", "on_init")
    )


def start_args(args: Dict[str, Any], handlers: Any) -> Dict[str, Any]:
    """``args`` of a run plus the op layer's ``handlers`` / ``skip_accumulation``."""
    out = dict(args)
    out["handlers"] = _wants_events(handlers)
    out["skip_accumulation"] = bool(handlers is not None and getattr(handlers, "skip_accumulation", False))
    return out


def _handler_call(handlers: Any, ev: Dict[str, Any]) -> Any:
    """The (handler, argument) pair for one op-layer event, or None."""
    h = handlers
    if h is None:
        return None
    kind = ev.get("type")
    if kind == "stdout" or kind == "stderr":
        f = h.on_stdout if kind == "stdout" else h.on_stderr
        if f is None:
            return None
        return f, OutputMessage.model_construct(text=ev["text"], timestamp=ev["timestamp"], is_error=kind == "stderr")
    if kind == "init":
        return (h.on_init, ExecutionInit(id=ev["id"], timestamp=ev["timestamp"])) if h.on_init else None
    if kind == "result":
        return (h.on_result, _result(ev)) if h.on_result else None
    if kind == "error":
        return (h.on_error, _error(ev)) if h.on_error else None
    if kind == "execution_complete":
        return (h.on_execution_complete, _complete(ev)) if h.on_execution_complete else None
    return None


def _result(r: Dict[str, Any]) -> ExecutionResult:
    raw = r.get("raw") or {}
    extra = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in raw.items() if k not in ("text", "text/plain")}
    return ExecutionResult(text=r.get("text"), timestamp=r.get("timestamp") or 0, extra_properties=extra)


def _error(e: Dict[str, Any]) -> ExecutionError:
    return ExecutionError(
        name=e["name"], value=e["value"], timestamp=e.get("timestamp") or 0, traceback=list(e.get("traceback") or [])
    )


def _complete(c: Dict[str, Any]) -> ExecutionComplete:
    return ExecutionComplete(
        timestamp=c.get("timestamp") or 0, execution_time_in_millis=c.get("execution_time_ms") or 0
    )


def _messages(texts: List[str], stamps: List[int], is_error: bool) -> List[OutputMessage]:
    """The kept output of one stream, built natively as ``model_construct`` would."""
    out: List[OutputMessage] = _native.output_messages(OutputMessage, texts, stamps, is_error)
    return out


def execution_of(end: Dict[str, Any]) -> Execution:
    """The :class:`Execution` of a run's final ``end`` item: the outcome the core
    folded (exit code, execution count, error, completion, kept output)."""
    if not end.get("ok"):
        e = end.get("error") or {}
        raise map_error(
            NativeError(
                e.get("kind") or "internal",
                e.get("message") or "",
                e.get("status"),
                e.get("code"),
                e.get("request_id"),
                e.get("operation") or "",
            )
        )
    x = end["execution"]
    ex = Execution(
        id=x.get("id"),
        execution_count=x.get("execution_count"),
        exit_code=x.get("exit_code"),
        error=_error(x["error"]) if x.get("error") else None,
        complete=_complete(x["complete"]) if x.get("complete") else None,
    )
    ex.result = [_result(r) for r in x.get("results") or []]
    ex.logs.stdout = _messages(x.get("stdout") or [], x.get("stdout_timestamps") or [], False)
    ex.logs.stderr = _messages(x.get("stderr") or [], x.get("stderr_timestamps") or [], True)
    return ex


def _output_handlers(handlers: Any) -> Tuple[Any, Any]:
    """The stdout and stderr handlers (None when absent)."""
    if handlers is None:
        return None, None
    return getattr(handlers, "on_stdout", None), getattr(handlers, "on_stderr", None)


# Group kinds of ``next_events`` (bindings/python/src/events.rs).
_STDOUT = 1
_STDERR = 2


# The op that runs what a start op starts, to its end.
_RUN_OPS = {
    "commands.start": "commands.run",
    "commands.start_in_session": "commands.run_in_session",
    "code.start": "code.run",
    "isolation.start": "isolation.run",
}


def run_execution(client: Any, op: str, args: Dict[str, Any], handlers: Any) -> Execution:
    """Starts a run (``commands.start`` / ``commands.start_in_session`` / ``code.start``)
    and pulls its events on this thread, calling sync handlers in order; the result is
    the run's folded outcome. The native side calls the output handlers itself, one
    ready-made ``OutputMessage`` per line (one native call per batch, no Python loop
    per line); every other item comes to ``other``.

    Without handlers that want events it is one native call of the run op instead
    (``commands.run``, ...), which runs it to its end inside the library (the same
    Execution: ``test_one_call_run_equals_the_streamed_run``)."""
    if not _wants_events(handlers):
        x = call(client, _RUN_OPS[op], start_args(args, handlers))
        return execution_of({"ok": True, "execution": x})
    r = call(client, op, start_args(args, handlers))
    handle = r["handle"]
    on_out, on_err = _output_handlers(handlers)
    end: List[Dict[str, Any]] = []

    def other(ev: Dict[str, Any]) -> None:
        if ev["type"] == "end":
            end.append(ev)
            return
        todo = _handler_call(handlers, ev)
        if todo is not None:
            todo[0](todo[1])

    try:
        while not end:
            done = native(client.dispatch_events, handle, _BATCH, OutputMessage, on_out, on_err, other)
            if done and not end:
                raise SandboxInternalException("the run ended without its outcome")
        return execution_of(end[0])
    finally:
        call(client, "release", {"handle": handle})


async def _each(handler: Any, messages: List[OutputMessage]) -> None:
    """Calls ``handler`` per message, awaiting what it returns when awaitable: a sync
    handler runs as a plain call (no coroutine per line)."""
    for m in messages:
        res = handler(m)
        if res is not None and inspect.isawaitable(res):
            await res


async def arun_execution(client: Any, op: str, args: Dict[str, Any], handlers: Any) -> Execution:
    """:func:`run_execution` for the async API: async handlers are awaited in event
    order. Cancelling the awaiting task cancels the run (on either path the command
    is interrupted on the server)."""
    if not _wants_events(handlers):
        x = await acall(client, _RUN_OPS[op], start_args(args, handlers))
        return execution_of({"ok": True, "execution": x})
    r = await acall(client, op, start_args(args, handlers))
    handle = r["handle"]
    on_out, on_err = _output_handlers(handlers)
    try:
        while True:
            groups, done = await anative(
                client.next_events_async, handle, _BATCH, OutputMessage, on_out is not None, on_err is not None
            )
            for kind, payload in groups:
                if kind == _STDOUT:
                    await _each(on_out, payload)
                elif kind == _STDERR:
                    await _each(on_err, payload)
                elif payload["type"] == "end":
                    return execution_of(payload)
                else:
                    todo = _handler_call(handlers, payload)
                    if todo is not None:
                        res = todo[0](todo[1])
                        if inspect.isawaitable(res):
                            await res
            if done:
                raise SandboxInternalException("the run ended without its outcome")
    finally:
        # No I/O: releasing stops the run if it is still going.
        call(client, "release", {"handle": handle})


async def asleep(seconds: float) -> None:
    """``asyncio.sleep`` (the sync API, generated from the async one, gets :func:`sleep`)."""
    import asyncio

    await asyncio.sleep(seconds)


def sleep(seconds: float) -> None:
    """``time.sleep`` (the blocking counterpart of :func:`asleep`)."""
    time.sleep(seconds)


def secs(td: Any) -> Optional[float]:
    """A timedelta (or number of seconds) as seconds."""
    if td is None:
        return None
    if hasattr(td, "total_seconds"):
        return float(td.total_seconds())
    return float(td)
