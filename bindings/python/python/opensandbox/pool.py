"""Client-side sandbox pools: the public names (``opensandbox.pool``)."""

from opensandbox._async_pool_store import InMemoryAsyncPoolStateStore
from opensandbox._pool_store import InMemoryPoolStateStore
from opensandbox.pool_async import AsyncSandboxPool, SandboxPoolAsync
from opensandbox.pool_manager import SandboxPoolManager, SandboxPoolManagerAsync, SandboxPoolManagerSync
from opensandbox.pool_types import (
    AcquirePolicy,
    AsyncPoolConfig,
    AsyncPooledSandboxCreator,
    AsyncPoolStateStore,
    IdleEntry,
    PoolConfig,
    PoolCreationSpec,
    PoolDestroyOptions,
    PoolDestroyResult,
    PoolDestroyState,
    PoolDestroyStrategy,
    PooledSandboxCreateContext,
    PooledSandboxCreateReason,
    PooledSandboxCreator,
    PoolLifecycleState,
    PoolSnapshot,
    PoolState,
    PoolStateStore,
    StoreCounters,
    TakeIdleResult,
)
from opensandbox.sync.pool import SandboxPoolSync

SandboxPool = SandboxPoolSync

__all__ = [
    "AcquirePolicy",
    "AsyncPooledSandboxCreator",
    "AsyncPoolConfig",
    "AsyncPoolStateStore",
    "AsyncSandboxPool",
    "IdleEntry",
    "InMemoryAsyncPoolStateStore",
    "InMemoryPoolStateStore",
    "PooledSandboxCreateContext",
    "PooledSandboxCreateReason",
    "PooledSandboxCreator",
    "PoolConfig",
    "PoolCreationSpec",
    "PoolDestroyOptions",
    "PoolDestroyResult",
    "PoolDestroyState",
    "PoolDestroyStrategy",
    "PoolLifecycleState",
    "PoolSnapshot",
    "PoolState",
    "PoolStateStore",
    "SandboxPoolAsync",
    "SandboxPool",
    "SandboxPoolManager",
    "SandboxPoolManagerAsync",
    "SandboxPoolManagerSync",
    "SandboxPoolSync",
    "StoreCounters",
    "TakeIdleResult",
]
