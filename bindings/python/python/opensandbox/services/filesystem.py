"""Async ``Filesystem`` service (``sandbox.files``)."""

from __future__ import annotations

from typing import Any, AsyncIterator, Dict, List, Optional

from opensandbox import _bridge
from opensandbox.models.filesystem import (
    ContentReplaceEntry,
    ContentReplaceResult,
    DirectoryListEntry,
    EntryInfo,
    MoveEntry,
    SearchEntry,
    SetPermissionEntry,
    WriteEntry,
)
from opensandbox.services._common import entry, perm_entries, read_args, read_size, write_args


class Filesystem:
    """Files of one sandbox: uploads stream from bytes, str or file objects; downloads
    come back whole, as text, or as a stream of chunks.

    ``scope`` (1.1) selects other file routes for every call: ``{"identity": {"uid",
    "gid"}}`` (``sandbox.files_with_identity``) or ``{"isolated_session": id}`` (an
    isolated session's ``files``)."""

    def __init__(self, client: Any, sandbox_id: str, scope: Optional[Dict[str, Any]] = None) -> None:
        self._client = client
        self._id = sandbox_id
        self._scope: Dict[str, Any] = dict(scope or {})

    def _args(self, args: Dict[str, Any]) -> Dict[str, Any]:
        """``args`` with this client's scope."""
        args.update(self._scope)
        return args

    async def read_file(
        self,
        path: str,
        *,
        encoding: str = "utf-8",
        range_header: Optional[str] = None,
        offset: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> str:
        """A file as text (``offset``/``limit``: 1-based lines; ``range_header``: bytes)."""
        data = await self.read_bytes(path, range_header=range_header, offset=offset, limit=limit)
        return data.decode(encoding)

    async def read_bytes(
        self,
        path: str,
        *,
        range_header: Optional[str] = None,
        offset: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> bytes:
        """A file as bytes."""
        data: bytes = await _bridge.anative(
            self._client.read_bytes_async, self._args(read_args(self._id, path, range_header, offset, limit))
        )
        return data

    async def read_bytes_stream(
        self,
        path: str,
        *,
        chunk_size: int = 64 * 1024,
        range_header: Optional[str] = None,
        offset: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> AsyncIterator[bytes]:
        """A file as an async iterator of ``bytes`` chunks of ``chunk_size`` bytes (the
        last one shorter)."""
        per_read = read_size(chunk_size)
        r = await _bridge.acall(
            self._client, "download.open", self._args(read_args(self._id, path, range_header, offset, limit))
        )
        return _aiter_chunks(self._client, r["handle"], per_read, chunk_size)

    async def write_files(self, entries: List[WriteEntry]) -> None:
        """Writes several files in one request."""
        args, blobs = write_args(self._id, entries)
        await _bridge.acall(self._client, "files.write_files", self._args(args), blobs)

    async def write_file(
        self,
        path: str,
        data: Any,
        *,
        encoding: str = "utf-8",
        mode: int = 755,
        owner: Optional[str] = None,
        group: Optional[str] = None,
    ) -> None:
        """Writes one file from str, bytes or a readable file object (streamed)."""
        await self.write_files(
            [WriteEntry(path=path, data=data, encoding=encoding, mode=mode, owner=owner, group=group)]
        )

    async def create_directories(self, entries: List[WriteEntry]) -> None:
        """Creates directories (with parents) with mode/owner/group."""
        await _bridge.acall(
            self._client,
            "files.create_directories",
            self._args({"sandbox": self._id, "entries": perm_entries(entries)}),
        )

    async def delete_files(self, paths: List[str]) -> None:
        """Deletes files."""
        await _bridge.acall(self._client, "files.delete_files", self._args({"sandbox": self._id, "paths": list(paths)}))

    async def delete_directories(self, paths: List[str]) -> None:
        """Deletes directories recursively."""
        await _bridge.acall(
            self._client, "files.delete_directories", self._args({"sandbox": self._id, "paths": list(paths)})
        )

    async def move_files(self, entries: List[MoveEntry]) -> None:
        """Moves / renames."""
        items = [{"src": e.src, "dest": e.dest} for e in entries]
        await _bridge.acall(self._client, "files.move_files", self._args({"sandbox": self._id, "entries": items}))

    async def set_permissions(self, entries: List[SetPermissionEntry]) -> None:
        """Sets mode / owner / group."""
        await _bridge.acall(
            self._client, "files.set_permissions", self._args({"sandbox": self._id, "entries": perm_entries(entries)})
        )

    async def replace_contents(self, entries: List[ContentReplaceEntry]) -> None:
        """Replaces text in files."""
        await self.replace_contents_detailed(entries)

    async def replace_contents_detailed(self, entries: List[ContentReplaceEntry]) -> List[ContentReplaceResult]:
        """Replaces text in files; returns the count per file."""
        items = [e.model_dump() for e in entries]
        r = await _bridge.acall(
            self._client, "files.replace_contents_detailed", self._args({"sandbox": self._id, "entries": items})
        )
        return [ContentReplaceResult.model_validate(x) for x in r]

    async def search(self, entry: SearchEntry) -> List[EntryInfo]:
        """Files under ``entry.path`` matching ``entry.pattern``."""
        r = await _bridge.acall(
            self._client,
            "files.search",
            self._args({"sandbox": self._id, "path": entry.path, "pattern": entry.pattern}),
        )
        return [_entry(x) for x in r]

    async def list_directory(self, entry: DirectoryListEntry) -> List[EntryInfo]:
        """Entries of a directory, ``entry.depth`` levels deep."""
        r = await _bridge.acall(
            self._client,
            "files.list_directory",
            self._args({"sandbox": self._id, "path": entry.path, "depth": entry.depth}),
        )
        return [_entry(x) for x in r]

    async def get_file_info(self, paths: List[str]) -> Dict[str, EntryInfo]:
        """Metadata of paths, by path."""
        r = await _bridge.acall(
            self._client, "files.get_file_info", self._args({"sandbox": self._id, "paths": list(paths)})
        )
        return {k: _entry(v) for k, v in r.items()}


_entry = entry


async def _aiter_chunks(client: Any, handle: int, per_read: int, chunk_size: int) -> AsyncIterator[bytes]:
    try:
        while True:
            items = await _bridge.anative(client.read_chunks_async, handle, per_read, chunk_size)
            if not items:
                return
            for item in items:
                yield item
    finally:
        _bridge.call(client, "release", {"handle": handle})


__all__ = ["Filesystem"]
