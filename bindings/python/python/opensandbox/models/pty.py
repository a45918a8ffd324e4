"""Models of PTY sessions (``sandbox.pty``) and of followed background logs."""

from dataclasses import dataclass
from typing import Optional

from pydantic import ConfigDict, Field

from opensandbox.models._base import LazyModel


class PtySessionStatus(LazyModel):
    """``GET /pty/{id}``: whether the shell runs and how many bytes it ever produced."""

    model_config = ConfigDict(populate_by_name=True)

    session_id: str = Field(alias="session_id")
    running: bool = False
    output_offset: int = 0


@dataclass(frozen=True)
class PtyOutput:
    """Output bytes of a PTY session starting at absolute byte ``offset``. ``channel``
    is ``stdout``, ``stderr`` (pipe mode) or ``replay`` (bytes replayed on attach).
    Chunk boundaries are arbitrary (a UTF-8 or escape sequence may be split)."""

    data: bytes
    offset: int
    channel: str = "stdout"


@dataclass(frozen=True)
class PtyRead:
    """One :meth:`PtyConnection.read`: the bytes (one channel unless ``until`` was
    given), where they start, the offset after them, and what else happened."""

    data: bytes
    offset: Optional[int]
    next_offset: int
    channel: Optional[str] = None
    exit_code: Optional[int] = None
    closed: bool = False
    close_code: Optional[int] = None
    timed_out: bool = False
    done: bool = False

    @property
    def text(self) -> str:
        """The bytes as UTF-8 (invalid sequences replaced)."""
        return self.data.decode("utf-8", "replace")


@dataclass(frozen=True)
class LogChunk:
    """A slice of a background command's log at byte ``offset``."""

    offset: int
    data: bytes

    @property
    def text(self) -> str:
        """The bytes as UTF-8 (invalid sequences replaced)."""
        return self.data.decode("utf-8", "replace")


__all__ = ["LogChunk", "PtyOutput", "PtyRead", "PtySessionStatus"]
