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
from opensandbox.sync import SandboxManagerSync, SandboxPoolSync, SandboxSync

__version__ = "1.1.1"

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
