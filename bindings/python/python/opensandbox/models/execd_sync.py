"""Synchronous execution handlers (``opensandbox.models.execd_sync``)."""

from typing import Any, Callable, Optional

from pydantic import ConfigDict, Field

from opensandbox.models._base import LazyModel

SyncOutputHandler = Callable[[Any], None]


class ExecutionHandlersSync(LazyModel):
    """Callbacks called in event order, on the calling thread, as events arrive."""

    on_stdout: Optional[Callable[..., Any]] = None
    on_stderr: Optional[Callable[..., Any]] = None
    on_result: Optional[Callable[..., Any]] = None
    on_execution_complete: Optional[Callable[..., Any]] = None
    on_error: Optional[Callable[..., Any]] = None
    on_init: Optional[Callable[..., Any]] = None
    skip_accumulation: bool = Field(default=False)

    model_config = ConfigDict(populate_by_name=True, arbitrary_types_allowed=True)


__all__ = ["ExecutionHandlersSync"]
