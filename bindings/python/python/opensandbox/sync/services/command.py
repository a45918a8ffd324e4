# Generated from opensandbox/services/command.py by bindings/python/scripts/gen_sync.py (unasync): do not edit.
"""Sync ``Commands`` service (``sandbox.commands``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Optional, Sequence, Union

from opensandbox import _bridge
from opensandbox.models.execd import CommandLogs, CommandStatus, Execution, RunCommandOpts
from opensandbox.models.execd_sync import ExecutionHandlersSync
from opensandbox.services._common import command_args, command_text


class CommandsSync:
    """Commands, background commands and bash sessions of one sandbox."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    def run(
        self,
        command: Union[str, Sequence[str]],
        *,
        opts: Optional[RunCommandOpts] = None,
        handlers: Optional[ExecutionHandlersSync] = None,
    ) -> Execution:
        """Runs a command; handlers are awaited in event order as output arrives.
        ``exit_code`` is 0 on success, the command's status on failure, None in the background."""
        return _bridge.run_execution(self._client, "commands.start", command_args(self._id, command, opts), handlers)

    def set_env(self, key: str, value: str) -> None:
        """Persists KEY=VALUE for later commands and new sessions: appends it to the file
        named by the sandbox's ``$EXECD_ENVS`` (the op ``commands.set_env``). A key not
        matching ``[A-Za-z_][A-Za-z0-9_]*`` or a NUL in the value raises
        ``InvalidArgumentException``; a failed append raises ``SandboxApiException``."""
        _bridge.call(self._client, "commands.set_env", {"sandbox": self._id, "key": key, "value": value})

    def interrupt(self, execution_id: str) -> None:
        """Interrupts a running command (SIGTERM, then SIGKILL)."""
        _bridge.call(self._client, "commands.interrupt", {"sandbox": self._id, "id": execution_id})

    def get_command_status(self, execution_id: str) -> CommandStatus:
        """Status of a command."""
        r = _bridge.call(self._client, "commands.get_command_status", {"sandbox": self._id, "id": execution_id})
        return CommandStatus.model_validate(r)

    def get_background_command_logs(self, execution_id: str, cursor: Optional[int] = None) -> CommandLogs:
        """Output of a background command since ``cursor``."""
        args = {"sandbox": self._id, "id": execution_id, "cursor": cursor}
        r = _bridge.call(self._client, "commands.get_background_command_logs", args)
        return CommandLogs.model_validate(r)

    def create_session(self, *, working_directory: Optional[str] = None) -> str:
        """Creates a bash session; returns its id."""
        args = {"sandbox": self._id, "working_directory": working_directory}
        return str((_bridge.call(self._client, "commands.create_session", args))["session_id"])

    def run_in_session(
        self,
        session_id: str,
        command: str,
        *,
        working_directory: Optional[str] = None,
        timeout: Optional[timedelta] = None,
        handlers: Optional[ExecutionHandlersSync] = None,
    ) -> Execution:
        """Runs a command in a session (state such as cwd and env persists)."""
        args = {
            "sandbox": self._id,
            "session_id": session_id,
            "command": command_text(command),
            "working_directory": working_directory,
            "timeout_ms": None if timeout is None else int(timeout.total_seconds() * 1000),
        }
        return _bridge.run_execution(self._client, "commands.start_in_session", args, handlers)

    def delete_session(self, session_id: str) -> None:
        """Deletes a session."""
        _bridge.call(self._client, "commands.delete_session", {"sandbox": self._id, "session_id": session_id})


__all__ = ["CommandsSync"]
