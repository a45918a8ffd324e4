"""Execution models (``opensandbox.models.execd``), as in the official SDK."""

from datetime import timedelta
from typing import Any, Awaitable, Callable, Dict, List, Optional

from pydantic import ConfigDict, Field, model_validator

from opensandbox.models._base import LazyModel


class OutputMessage(LazyModel):
    """One stdout/stderr message (a command line arrives without its newline)."""

    text: str
    timestamp: int = Field(description="Unix timestamp in milliseconds")
    is_error: bool = False


class ExecutionResult(LazyModel):
    """A code result (``text/plain`` in ``text``; other MIME types in ``extra_properties``)."""

    text: Optional[str] = None
    timestamp: int = 0
    extra_properties: Dict[str, str] = Field(default_factory=dict)

    model_config = ConfigDict(populate_by_name=True)


class ExecutionError(LazyModel):
    """The error that ended an execution."""

    name: str
    value: str
    timestamp: int = 0
    traceback: List[str] = Field(default_factory=list)


class ExecutionLogs(LazyModel):
    """stdout and stderr messages in arrival order."""

    stdout: List[OutputMessage] = Field(default_factory=list)
    stderr: List[OutputMessage] = Field(default_factory=list)

    def add_stdout(self, message: OutputMessage) -> None:
        """Append a stdout message."""
        self.stdout.append(message)

    def add_stderr(self, message: OutputMessage) -> None:
        """Append a stderr message."""
        self.stderr.append(message)


def _format_output_messages(messages: List[OutputMessage]) -> str:
    out: List[str] = []
    last = ""
    for m in messages:
        t = m.text
        if t and last and last not in "\r\n" and t[0] not in "\r\n":
            out.append("\n")
        out.append(t)
        if t:
            last = t[-1]
    return "".join(out).replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")


class ExecutionComplete(LazyModel):
    """Successful end of an execution."""

    timestamp: int
    execution_time_in_millis: int = 0


class ExecutionInit(LazyModel):
    """First event of an execution: its id."""

    id: str
    timestamp: int


class Execution(LazyModel):
    """Everything one execution produced."""

    id: Optional[str] = None
    execution_count: Optional[int] = None
    result: List[ExecutionResult] = Field(default_factory=list)
    error: Optional[ExecutionError] = None
    complete: Optional[ExecutionComplete] = None
    exit_code: Optional[int] = Field(
        default=None,
        description="0 on completion, int(error.value) on error (foreground commands only)",
    )
    logs: ExecutionLogs = Field(default_factory=ExecutionLogs)

    model_config = ConfigDict(populate_by_name=True)

    def add_result(self, result: ExecutionResult) -> None:
        """Append a result."""
        self.result.append(result)

    @property
    def text(self) -> str:
        """stdout joined by newlines, then the result texts."""
        chunks: List[str] = []
        out = _format_output_messages(self.logs.stdout)
        if out:
            chunks.append(out)
        for r in self.result:
            if r.text:
                chunks.append(r.text.rstrip("\n"))
        return "\n".join(chunks)

    def __str__(self) -> str:
        parts: List[str] = []
        if self.logs.stdout or self.result:
            parts.append(self.text)
        if self.logs.stderr:
            parts.append("[stderr]\n" + _format_output_messages(self.logs.stderr))
        if self.error:
            parts.append(f"[error] {self.error.name}: {self.error.value}")
        return "\n".join(parts)


AsyncOutputHandler = Callable[[Any], Awaitable[None]]


class ExecutionHandlers(LazyModel):
    """Async callbacks, awaited in event order as the events arrive.

    Plain (non-async) callables are accepted too and simply called.
    """

    on_stdout: Optional[Callable[..., Any]] = None
    on_stderr: Optional[Callable[..., Any]] = None
    on_result: Optional[Callable[..., Any]] = None
    on_execution_complete: Optional[Callable[..., Any]] = None
    on_error: Optional[Callable[..., Any]] = None
    on_init: Optional[Callable[..., Any]] = None
    skip_accumulation: bool = Field(
        default=False,
        description="Deliver stdout/stderr only to the handlers, without keeping them in logs.",
    )

    model_config = ConfigDict(populate_by_name=True, arbitrary_types_allowed=True)


class RunCommandOpts(LazyModel):
    """Options of ``commands.run``."""

    background: bool = False
    working_directory: Optional[str] = None
    timeout: Optional[timedelta] = Field(default=None, description="Server-side limit of the command's run time")
    uid: Optional[int] = Field(default=None, ge=0)
    gid: Optional[int] = Field(default=None, ge=0)
    envs: Optional[Dict[str, str]] = None

    model_config = ConfigDict(populate_by_name=True)

    @model_validator(mode="after")
    def validate_uid_gid_dependency(self) -> "RunCommandOpts":
        """``gid`` needs ``uid``."""
        if self.gid is not None and self.uid is None:
            raise ValueError("uid is required when gid is provided")
        return self


class CommandStatus(LazyModel):
    """Status of a (background) command."""

    id: Optional[str] = None
    content: Optional[str] = None
    running: Optional[bool] = None
    exit_code: Optional[int] = None
    error: Optional[str] = None
    started_at: Optional[Any] = None
    finished_at: Optional[Any] = None


class CommandLogs(LazyModel):
    """Output of a background command since a cursor."""

    content: str
    cursor: Optional[int] = None


__all__ = [
    "AsyncOutputHandler",
    "OutputMessage",
    "ExecutionResult",
    "ExecutionError",
    "ExecutionLogs",
    "ExecutionComplete",
    "ExecutionInit",
    "Execution",
    "ExecutionHandlers",
    "RunCommandOpts",
    "CommandStatus",
    "CommandLogs",
]
