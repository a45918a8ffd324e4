"""Async ``Commands`` service (``sandbox.commands``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Optional, Sequence, Union

from opensandbox import _bridge
from opensandbox.models.execd import CommandLogs, CommandStatus, Execution, RunCommandOpts
from opensandbox.models.execd import ExecutionHandlers
from opensandbox.services._common import command_args, command_text


class Commands:
    """Commands, background commands and bash sessions of one sandbox."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    async def run(
        self,
        command: Union[str, Sequence[str]],
        *,
        opts: Optional[RunCommandOpts] = None,
        handlers: Optional[ExecutionHandlers] = None,
    ) -> Execution:
        """Runs a command; handlers are awaited in event order as output arrives.
        ``exit_code`` is 0 on success, the command's status on failure, None in the background."""
        return await _bridge.arun_execution(
            self._client, "commands.start", command_args(self._id, command, opts), handlers
        )

    async def set_env(self, key: str, value: str) -> None:
        """Persists KEY=VALUE for later commands and new sessions: appends it to the file
        named by the sandbox's ``$EXECD_ENVS`` (the op ``commands.set_env``). A key not
        matching ``[A-Za-z_][A-Za-z0-9_]*`` or a NUL in the value raises
        ``InvalidArgumentException``; a failed append raises ``SandboxApiException``."""
        await _bridge.acall(self._client, "commands.set_env", {"sandbox": self._id, "key": key, "value": value})

    async def interrupt(self, execution_id: str) -> None:
        """Interrupts a running command (SIGTERM, then SIGKILL)."""
        await _bridge.acall(self._client, "commands.interrupt", {"sandbox": self._id, "id": execution_id})

    async def get_command_status(self, execution_id: str) -> CommandStatus:
        """Status of a command."""
        r = await _bridge.acall(self._client, "commands.get_command_status", {"sandbox": self._id, "id": execution_id})
        return CommandStatus.model_validate(r)

    async def get_background_command_logs(self, execution_id: str, cursor: Optional[int] = None) -> CommandLogs:
        """Output of a background command since ``cursor``."""
        args = {"sandbox": self._id, "id": execution_id, "cursor": cursor}
        r = await _bridge.acall(self._client, "commands.get_background_command_logs", args)
        return CommandLogs.model_validate(r)

    async def create_session(self, *, working_directory: Optional[str] = None) -> str:
        """Creates a bash session; returns its id."""
        args = {"sandbox": self._id, "working_directory": working_directory}
        return str((await _bridge.acall(self._client, "commands.create_session", args))["session_id"])

    async def run_in_session(
        self,
        session_id: str,
        command: str,
        *,
        working_directory: Optional[str] = None,
        timeout: Optional[timedelta] = None,
        handlers: Optional[ExecutionHandlers] = None,
    ) -> Execution:
        """Runs a command in a session (state such as cwd and env persists)."""
        args = {
            "sandbox": self._id,
            "session_id": session_id,
            "command": command_text(command),
            "working_directory": working_directory,
            "timeout_ms": None if timeout is None else int(timeout.total_seconds() * 1000),
        }
        return await _bridge.arun_execution(self._client, "commands.start_in_session", args, handlers)

    async def delete_session(self, session_id: str) -> None:
        """Deletes a session."""
        await _bridge.acall(self._client, "commands.delete_session", {"sandbox": self._id, "session_id": session_id})


__all__ = ["Commands"]
