"""File models (``opensandbox.models.filesystem``)."""

from datetime import datetime
from io import IOBase
from typing import Any, Optional, Union

from pydantic import ConfigDict, Field, field_validator

from opensandbox.models._base import LazyModel


def _not_empty(v: str, what: str) -> str:
    if not v or not v.strip():
        raise ValueError(f"{what} cannot be empty")
    return v


class EntryInfo(LazyModel):
    """A file or directory (``mode`` as octal digits in a decimal int, e.g. 644)."""

    path: str
    entry_type: Optional[str] = Field(default=None, alias="type")
    mode: int
    owner: str
    group: str
    size: int
    modified_at: datetime
    created_at: datetime

    model_config = ConfigDict(populate_by_name=True)


class WriteEntry(LazyModel):
    """One file to write: ``data`` is str, bytes or a readable file object (streamed)."""

    path: str
    data: Optional[Union[str, bytes, Any]] = None
    mode: int = 755
    owner: Optional[str] = None
    group: Optional[str] = None
    encoding: str = "utf-8"

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @field_validator("path")
    @classmethod
    def path_must_not_be_empty(cls, v: str) -> str:
        return _not_empty(v, "path")

    @field_validator("mode")
    @classmethod
    def mode_must_be_non_negative(cls, v: int) -> int:
        if v < 0:
            raise ValueError("mode must be non-negative")
        return v


class DirectoryListEntry(LazyModel):
    """A directory to list, ``depth`` levels deep."""

    path: str
    depth: Optional[int] = None

    @field_validator("path")
    @classmethod
    def path_must_not_be_empty(cls, v: str) -> str:
        return _not_empty(v, "path")


class MoveEntry(LazyModel):
    """A move / rename: ``MoveEntry(source=..., destination=...)`` as the official, or
    by field name (``src=``, ``dest=``)."""

    src: str = Field(alias="source")
    dest: str = Field(alias="destination")

    model_config = ConfigDict(populate_by_name=True)


class SetPermissionEntry(LazyModel):
    """Owner, group and mode of a path."""

    path: str
    owner: Optional[str] = None
    group: Optional[str] = None
    mode: int = 755


class ContentReplaceEntry(LazyModel):
    """Replace ``old_content`` by ``new_content`` in a file."""

    path: str
    old_content: str
    new_content: str


class ContentReplaceResult(LazyModel):
    """How many occurrences were replaced in one file."""

    path: str
    replaced_count: int


class SearchEntry(LazyModel):
    """A glob search under ``path``."""

    path: str
    pattern: str = "*"


__all__ = [
    "EntryInfo",
    "WriteEntry",
    "DirectoryListEntry",
    "MoveEntry",
    "SetPermissionEntry",
    "ContentReplaceEntry",
    "ContentReplaceResult",
    "SearchEntry",
    "IOBase",
]
