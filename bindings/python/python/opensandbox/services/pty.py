"""Async ``Pty`` service (``sandbox.pty``): interactive terminal sessions over the execd
WebSocket, and the live follow of a background command's log.

Not in the official Python SDK (1.1.1 has no PTY); names follow the official Kotlin
``Pty`` service (``create_session``, ``get_session``, ``delete_session``) plus
``attach``, which drives the WebSocket for you.
"""

from __future__ import annotations

import base64
from typing import Any, AsyncIterator, Dict, List, Optional, Union

from opensandbox import _bridge
from opensandbox.models.pty import LogChunk, PtyOutput, PtyRead, PtySessionStatus


class PtyConnection:
    """An attached PTY session: iterate it for output (``PtyOutput`` chunks with their
    absolute offsets), ``write`` to type, ``resize``, ``signal``, ``close`` to detach
    (the shell keeps running; reattach with ``since=next_offset``).

    Use as ``async with`` to detach on exit.
    """

    def __init__(self, client: Any, handle: int, session_id: str, mode: str, since: int) -> None:
        self._client = client
        self._handle = handle
        self.session_id = session_id
        self.mode = mode
        self.next_offset = since
        self.exit_code: Optional[int] = None
        self.close_code: Optional[int] = None
        self.errors: List[Dict[str, Any]] = []
        self._done = False

    async def read(
        self, *, until: Optional[str] = None, until_exit: bool = False, timeout: Optional[float] = None
    ) -> PtyRead:
        """One read: what has arrived (waiting for something, one channel at a time);
        with ``until``, all output until it contains that text; with ``until_exit``,
        all output until the shell exits and the connection closes. A wait that passes
        ``timeout`` seconds returns what arrived with ``timed_out`` set."""
        args: Dict[str, Any] = {"handle": self._handle}
        if until is not None:
            args["until"] = until
        if until_exit:
            args["until_exit"] = True
        if timeout is not None:
            args["wait_ms"] = int(timeout * 1000)
        r = await _bridge.acall(self._client, "pty.read", args)
        return self._account(r)

    def _account(self, r: Dict[str, Any]) -> PtyRead:
        read = PtyRead(
            data=base64.b64decode(r["data_b64"]),
            offset=r.get("offset"),
            next_offset=r["next_offset"],
            channel=r.get("channel"),
            exit_code=r.get("exit_code"),
            closed=bool(r.get("closed")),
            close_code=r.get("close_code"),
            timed_out=bool(r.get("timed_out")),
            done=bool(r.get("done")),
        )
        self.next_offset = read.next_offset
        if read.exit_code is not None:
            self.exit_code = read.exit_code
        if read.close_code is not None:
            self.close_code = read.close_code
        self.errors.extend(r.get("errors") or [])
        self._done = read.done
        return read

    def __aiter__(self) -> AsyncIterator[PtyOutput]:
        return self._aiter_chunks()

    async def _aiter_chunks(self) -> AsyncIterator[PtyOutput]:
        while not self._done:
            r = await self.read()
            if r.data:
                yield PtyOutput(data=r.data, offset=r.offset or 0, channel=r.channel or "stdout")

    async def write(self, data: Union[bytes, str]) -> None:
        """Sends input (bytes, or text as UTF-8). In PTY mode these are typed keys:
        ``"\\r"`` is Enter, ``b"\\x03"`` Ctrl-C, ``b"\\x04"`` Ctrl-D."""
        if isinstance(data, str):
            args: Dict[str, Any] = {"handle": self._handle, "text": data}
        else:
            args = {"handle": self._handle, "data_b64": base64.b64encode(bytes(data)).decode("ascii")}
        await _bridge.acall(self._client, "pty.write", args)

    async def resize(self, cols: int, rows: int) -> None:
        """Sets the terminal size (the foreground program gets SIGWINCH)."""
        await _bridge.acall(self._client, "pty.resize", {"handle": self._handle, "cols": cols, "rows": rows})

    async def signal(self, name: str) -> None:
        """Signals the shell's process group (``SIGINT``, ``SIGTERM``, ``SIGKILL``,
        ``SIGQUIT``, ``SIGHUP``)."""
        await _bridge.acall(self._client, "pty.signal", {"handle": self._handle, "signal": name})

    async def close(self) -> int:
        """Detaches; returns the offset to pass as ``since`` to resume exactly here."""
        if self._handle == 0:
            return self.next_offset
        r = await _bridge.acall(self._client, "pty.close", {"handle": self._handle})
        self._handle = 0
        self._done = True
        self.next_offset = int(r["next_offset"])
        return self.next_offset

    async def __aenter__(self) -> "PtyConnection":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class Pty:
    """PTY sessions of one sandbox: a long-lived bash over a WebSocket, with a 1 MiB
    replay buffer addressed by byte offsets."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    async def create_session(self, *, cwd: Optional[str] = None, command: Optional[str] = None) -> str:
        """Creates a session (its shell starts on the first attach); returns its id."""
        args = {"sandbox": self._id, "cwd": cwd, "command": command}
        return str((await _bridge.acall(self._client, "pty.create", args))["session_id"])

    async def get_session(self, session_id: str) -> PtySessionStatus:
        """``running`` and ``output_offset`` (bytes ever produced) of a session."""
        r = await _bridge.acall(self._client, "pty.get", {"sandbox": self._id, "session_id": session_id})
        return PtySessionStatus.model_validate(r)

    async def delete_session(self, session_id: str) -> None:
        """Kills the session's shell and forgets it."""
        await _bridge.acall(self._client, "pty.delete", {"sandbox": self._id, "session_id": session_id})

    async def attach(
        self, session_id: str, *, since: Optional[int] = None, mode: str = "pty", takeover: bool = False
    ) -> PtyConnection:
        """Attaches over the WebSocket; the first output is the replay from ``since``
        (default 0: everything still buffered). ``mode`` (``"pty"`` or ``"pipe"``)
        counts only if this attach starts the shell. A session held by another client
        raises ``SandboxApiException`` (409 ``ALREADY_CONNECTED``) unless ``takeover``."""
        args = {"sandbox": self._id, "session_id": session_id, "since": since, "mode": mode, "takeover": takeover}
        r = await _bridge.acall(self._client, "pty.attach", args)
        return PtyConnection(self._client, int(r["handle"]), session_id, str(r["mode"]), int(r["since"]))

    async def follow_logs(
        self, execution_id: str, *, cursor: int = 0, interval: Optional[float] = None
    ) -> AsyncIterator[LogChunk]:
        """A background command's output as it is written, from any process that knows
        its id: chunks with their byte offsets, each starting where the previous ended;
        ends when the command has finished and everything it wrote was returned."""
        args: Dict[str, Any] = {"sandbox": self._id, "id": execution_id, "cursor": cursor}
        if interval is not None:
            args["interval_ms"] = int(interval * 1000)
        handle = (await _bridge.acall(self._client, "commands.follow_logs", args))["handle"]
        try:
            while True:
                batch = await _bridge.acall(self._client, "execution.next_batch", {"handle": handle})
                for item in batch["events"]:
                    if item.get("type") == "log":
                        yield LogChunk(offset=item["offset"], data=base64.b64decode(item["data_b64"]))
                    elif item.get("type") == "end" and not item.get("ok"):
                        _bridge.execution_of(item)  # raises the stream's error
                if batch["done"]:
                    return
        finally:
            await _bridge.acall(self._client, "release", {"handle": handle})


__all__ = ["Pty", "PtyConnection"]
