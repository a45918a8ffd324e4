"""OpenSandbox Python SDK, on the Rust client core.

A drop-in for the official ``opensandbox`` package: the same classes, parameters,
defaults, environment variables and exceptions.

```python
import asyncio
from opensandbox import Sandbox

async def main():
    sandbox = await Sandbox.create("python:3.11")
    try:
        await sandbox.files.write_file("hello.py", "print('Hello World')")
        result = await sandbox.commands.run("python hello.py")
        print(result.logs.stdout[0].text)
    finally:
        await sandbox.destroy()

asyncio.run(main())
```
"""

from typing import TYPE_CHECKING, Any

from opensandbox.config import ConnectionConfig, ConnectionConfigSync
from opensandbox.manager import SandboxManager
from opensandbox.models.execd import ExecutionHandlers
from opensandbox.models.execd_sync import ExecutionHandlersSync
from opensandbox.sandbox import Sandbox
from opensandbox.sync import SandboxManagerSync, SandboxSync

if TYPE_CHECKING:
    from opensandbox.pool import (
        AcquirePolicy,
        AsyncPooledSandboxCreator,
        AsyncSandboxPool,
        InMemoryAsyncPoolStateStore,
        InMemoryPoolStateStore,
        PoolCreationSpec,
        PoolDestroyOptions,
        PoolDestroyResult,
        PoolDestroyState,
        PoolDestroyStrategy,
        PooledSandboxCreateContext,
        PooledSandboxCreateReason,
        PooledSandboxCreator,
        SandboxPool,
        SandboxPoolAsync,
        SandboxPoolManager,
        SandboxPoolManagerAsync,
        SandboxPoolManagerSync,
    )
    from opensandbox.sync.pool import SandboxPoolSync

__version__ = "1.1.1"

# The pool (and its Redis layout, threads and locks) loads on first use: most programs
# never touch it, and importing it up front cost about a fifth of `import opensandbox`.
_LAZY = {
    name: "opensandbox.pool"
    for name in (
        "AcquirePolicy",
        "AsyncPooledSandboxCreator",
        "AsyncSandboxPool",
        "InMemoryAsyncPoolStateStore",
        "InMemoryPoolStateStore",
        "PoolCreationSpec",
        "PoolDestroyOptions",
        "PoolDestroyResult",
        "PoolDestroyState",
        "PoolDestroyStrategy",
        "PooledSandboxCreateContext",
        "PooledSandboxCreateReason",
        "PooledSandboxCreator",
        "SandboxPool",
        "SandboxPoolAsync",
        "SandboxPoolManager",
        "SandboxPoolManagerAsync",
        "SandboxPoolManagerSync",
    )
}
_LAZY["SandboxPoolSync"] = "opensandbox.sync.pool"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'opensandbox' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Sandbox",
    "SandboxManager",
    "SandboxSync",
    "SandboxManagerSync",
    "ConnectionConfig",
    "ConnectionConfigSync",
    "ExecutionHandlers",
    "ExecutionHandlersSync",
    "SandboxPoolSync",
    "SandboxPoolAsync",
    "AsyncSandboxPool",
    "SandboxPool",
    "AcquirePolicy",
    "AsyncPooledSandboxCreator",
    "PooledSandboxCreateContext",
    "PooledSandboxCreateReason",
    "PooledSandboxCreator",
    "PoolCreationSpec",
    "PoolDestroyOptions",
    "PoolDestroyResult",
    "PoolDestroyState",
    "PoolDestroyStrategy",
    "InMemoryAsyncPoolStateStore",
    "InMemoryPoolStateStore",
    "SandboxPoolManager",
    "SandboxPoolManagerAsync",
    "SandboxPoolManagerSync",
]
