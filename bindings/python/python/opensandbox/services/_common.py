"""Argument builders shared by the async and the sync services."""

from __future__ import annotations

import shlex
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from opensandbox.exceptions import InvalidArgumentException
from opensandbox.models.execd import RunCommandOpts
from opensandbox.models.filesystem import EntryInfo, WriteEntry

# About the bytes of one native read of the async iterator: each read is a callback from
# a runtime thread, so it takes many chunks at once (bindings/python/src/download.rs).
CHUNK = 1024 * 1024


def _check_chunk_size(chunk_size: int) -> None:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0:
        raise InvalidArgumentException(f"chunk_size must be a positive integer, got {chunk_size!r}")


def read_size(chunk_size: int) -> int:
    """Bytes per native read of the async download iterator: whole chunks, about CHUNK."""
    _check_chunk_size(chunk_size)
    return max(1, CHUNK // chunk_size) * chunk_size


def sync_read_size(chunk_size: int) -> int:
    """Bytes per read of the sync download iterator: one chunk (the calling thread reads
    the socket itself, a read costs no hand-off, and a 64 KiB `bytes` reuses heap
    memory where a larger one would be mapped afresh: src/download.rs)."""
    _check_chunk_size(chunk_size)
    return chunk_size


def command_text(command: Union[str, Sequence[str]]) -> str:
    """A command as one shell string (a list is quoted word by word)."""
    if isinstance(command, str):
        text = command
    else:
        text = shlex.join(list(command))
    if not text.strip():
        raise InvalidArgumentException("command cannot be empty")
    return text


def command_args(sandbox_id: str, command: Union[str, Sequence[str]], opts: Optional[RunCommandOpts]) -> Dict[str, Any]:
    args: Dict[str, Any] = {"sandbox": sandbox_id, "command": command_text(command)}
    if opts is not None:
        args["background"] = opts.background
        if opts.working_directory:
            args["working_directory"] = opts.working_directory
        if opts.timeout is not None:
            args["timeout_ms"] = int(opts.timeout.total_seconds() * 1000)
        if opts.uid is not None:
            args["uid"] = opts.uid
        if opts.gid is not None:
            args["gid"] = opts.gid
        if opts.envs:
            args["envs"] = dict(opts.envs)
    return args


def write_args(sandbox_id: str, entries: List[WriteEntry]) -> Tuple[Dict[str, Any], List[Any]]:
    """``files.write_files`` arguments and the data objects handed to the core
    (entry ``i`` takes ``blobs[i]``)."""
    items: List[Dict[str, Any]] = []
    blobs: List[Any] = []
    for e in entries:
        data = e.data
        if data is None:
            data = b""
        if isinstance(data, str) and e.encoding.lower().replace("-", "") != "utf8":
            data = data.encode(e.encoding)
        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        blobs.append(data)
        items.append({"path": e.path, "mode": e.mode, "owner": e.owner, "group": e.group})
    return {"sandbox": sandbox_id, "entries": items}, blobs


def perm_entries(entries: Sequence[Any]) -> List[Dict[str, Any]]:
    return [{"path": e.path, "mode": getattr(e, "mode", None), "owner": e.owner, "group": e.group} for e in entries]


def read_args(
    sandbox_id: str, path: str, range_header: Optional[str], offset: Optional[int], limit: Optional[int]
) -> Dict[str, Any]:
    args: Dict[str, Any] = {"sandbox": sandbox_id, "path": path}
    if range_header is not None:
        args["range"] = range_header
    if offset is not None:
        args["offset"] = offset
    if limit is not None:
        args["limit"] = limit
    return args


def entry(d: Dict[str, Any]) -> EntryInfo:
    return EntryInfo.model_validate(d)
