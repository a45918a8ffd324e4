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

if TYPE_CHECKING:
    from opensandbox.config import ConnectionConfig, ConnectionConfigSync
    from opensandbox.manager import SandboxManager
    from opensandbox.models.execd import ExecutionHandlers
    from opensandbox.models.execd_sync import ExecutionHandlersSync
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
    from opensandbox.sandbox import Sandbox
    from opensandbox.sync import SandboxManagerSync, SandboxSync
    from opensandbox.sync.pool import SandboxPoolSync

__version__ = "1.1.1"

# Every public name loads on first use (PEP 562): `import opensandbox` itself costs
# almost nothing, `from opensandbox import Sandbox` loads the async API and its models
# only, and the pool (its Redis layout, threads and locks) only when a program takes a
# name of it. Type checkers read the TYPE_CHECKING imports above.
_LAZY = {
    "ConnectionConfig": "opensandbox.config",
    "ConnectionConfigSync": "opensandbox.config",
    "SandboxManager": "opensandbox.manager",
    "ExecutionHandlers": "opensandbox.models.execd",
    "ExecutionHandlersSync": "opensandbox.models.execd_sync",
    "Sandbox": "opensandbox.sandbox",
    "SandboxSync": "opensandbox.sync",
    "SandboxManagerSync": "opensandbox.sync",
    "SandboxPoolSync": "opensandbox.sync.pool",
}
_LAZY.update(
    {
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
)


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
