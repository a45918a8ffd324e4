"""Type stubs of the extension module ``opensandbox._native`` (bindings/python/src/lib.rs).

Kept in sync by tests/test_native_stub.py, which compares this file with the module.
"""

from typing import Any, Callable, List, Optional

__version__: str

class NativeError(Exception):
    """args: (kind, message, status, code, request_id, operation)."""

class Task:
    """A running asynchronous call."""

    def cancel(self) -> None: ...

class Client:
    """One connection configuration (JSON) and the sandbox handles made through it."""

    def __init__(self, config: str) -> None: ...
    def call(self, op: str, args: str, blobs: Optional[List[Any]] = None) -> Any: ...
    def call_async(
        self, op: str, args: str, done: Callable[[bool, Any], None], blobs: Optional[List[Any]] = None
    ) -> Task: ...
    def forget(self, sandbox_id: str) -> None: ...

class ExecStream:
    """Events of one execution, in batches."""

    def next_batch(self) -> Any: ...
    def next_batch_async(self, done: Callable[[bool, Any], None]) -> Task: ...
    def close(self) -> None: ...

class Chunks:
    """Download chunks (bytes) or metrics samples (JSON text)."""

    def next_item(self) -> Any: ...
    def next_item_async(self, done: Callable[[bool, Any], None]) -> Task: ...
    def close(self) -> None: ...
