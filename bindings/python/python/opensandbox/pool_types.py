"""Types shared by the sync and async sandbox pools: policies, states, configuration,
state-store protocols and the destroy models (the official 1.1.1 names and defaults)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, List, Optional, Protocol, Tuple, Union, cast
from uuid import uuid4

from opensandbox.models.sandboxes import NetworkPolicy, PlatformSpec, SandboxImageSpec, Volume

if TYPE_CHECKING:
    from opensandbox.config.connection import ConnectionConfig
    from opensandbox.config.connection_sync import ConnectionConfigSync
    from opensandbox.sandbox import Sandbox
    from opensandbox.sync.sandbox import SandboxSync


class AcquirePolicy(Enum):
    """What ``acquire`` does when the idle buffer is empty or its candidates are unusable.

    ``FAIL_FAST`` and ``DIRECT_CREATE`` try one idle candidate; ``RETRY_NEXT_IDLE`` and
    ``RETRY_NEXT_IDLE_THEN_CREATE`` try up to ``max_acquire_retries``. The ``*CREATE``
    policies then create a sandbox directly; the others raise ``PoolEmptyException``
    (nothing idle) or ``PoolAcquireFailedException`` (candidates unusable).
    """

    FAIL_FAST = "FAIL_FAST"
    DIRECT_CREATE = "DIRECT_CREATE"
    RETRY_NEXT_IDLE = "RETRY_NEXT_IDLE"
    RETRY_NEXT_IDLE_THEN_CREATE = "RETRY_NEXT_IDLE_THEN_CREATE"


def effective_max_idle_attempts(policy: AcquirePolicy, max_acquire_retries: int) -> int:
    """How many idle candidates one ``acquire`` may try under ``policy``."""
    if policy in (AcquirePolicy.RETRY_NEXT_IDLE, AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE):
        return max(1, max_acquire_retries)
    return 1


def policy_falls_through_to_direct_create(policy: AcquirePolicy) -> bool:
    """Whether ``policy`` creates a sandbox once its idle candidates are exhausted."""
    return policy in (AcquirePolicy.DIRECT_CREATE, AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE)


class PoolState(Enum):
    """Health of a pool as ``snapshot()`` reports it."""

    HEALTHY = "HEALTHY"
    DEGRADED = "DEGRADED"
    DRAINING = "DRAINING"
    STOPPED = "STOPPED"


class PoolLifecycleState(Enum):
    """Lifecycle of one pool instance (``start`` → ``shutdown``)."""

    NOT_STARTED = "NOT_STARTED"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    DRAINING = "DRAINING"
    STOPPED = "STOPPED"


class PoolDestroyState(Enum):
    """Destroy state of a pool namespace, shared by every instance through the store."""

    ACTIVE = "ACTIVE"
    DESTROYING = "DESTROYING"
    DESTROYED = "DESTROYED"


class PoolDestroyStrategy(Enum):
    """How ``SandboxPoolManager.destroy`` treats idle sandboxes (only ``FORCE``: kill them)."""

    FORCE = "FORCE"


def _require_positive(value: timedelta, message: str) -> None:
    if value.total_seconds() <= 0:
        raise ValueError(message)


def _require_non_negative(value: timedelta, message: str) -> None:
    if value.total_seconds() < 0:
        raise ValueError(message)


def _require_text(value: Optional[str], message: str) -> None:
    if not value or not value.strip():
        raise ValueError(message)


@dataclass(frozen=True)
class PoolDestroyOptions:
    """Options of ``SandboxPoolManager.destroy``: the tombstone keeps the name destroyed
    for ``tombstone_ttl`` (None: forever); ``drain_timeout`` bounds killing idle sandboxes."""

    strategy: PoolDestroyStrategy = PoolDestroyStrategy.FORCE
    tombstone_ttl: Optional[timedelta] = timedelta(days=7)
    drain_timeout: timedelta = timedelta(seconds=30)

    def __post_init__(self) -> None:
        if self.tombstone_ttl is not None:
            _require_positive(self.tombstone_ttl, "tombstone_ttl must be positive")
        _require_non_negative(self.drain_timeout, "drain_timeout must be non-negative")


@dataclass(frozen=True)
class PoolDestroyResult:
    """Outcome of a completed destroy."""

    pool_name: str
    state: PoolDestroyState
    drained_idle_count: int
    killed_idle_count: int
    persistent_state_cleared: bool


@dataclass(frozen=True)
class IdleEntry:
    """One idle sandbox and when its idle membership (and server-side timeout) ends."""

    sandbox_id: str
    expires_at: datetime


@dataclass(frozen=True)
class StoreCounters:
    idle_count: int


@dataclass(frozen=True)
class TakeIdleResult:
    """A taken idle id (or None) and the ids skipped for too little remaining TTL.

    The skipped sandboxes are still alive on the server: the caller kills them.
    Entries already past their expiry are dropped silently (the server reaped them).
    """

    sandbox_id: Optional[str]
    discarded_alive_sandbox_ids: Tuple[str, ...] = ()


class PooledSandboxCreateReason(Enum):
    """Why the pool asks its ``sandbox_creator`` for a sandbox."""

    WARMUP = "WARMUP"
    DIRECT_CREATE = "DIRECT_CREATE"


@dataclass(frozen=True)
class PooledSandboxCreateContext:
    """What a ``sandbox_creator`` gets: the pool, the reason and the readiness settings to use."""

    pool_name: str
    owner_id: str
    idle_timeout: timedelta
    reason: PooledSandboxCreateReason
    ready_timeout: timedelta
    health_check_polling_interval: timedelta
    skip_health_check: bool
    health_check: Union[Callable[[SandboxSync], bool], Callable[[Sandbox], Awaitable[bool]], None]
    connection_config: Union[ConnectionConfigSync, ConnectionConfig]


class PooledSandboxCreator(Protocol):
    """Creates one sandbox for a sync pool (instead of ``SandboxSync.create`` from the spec)."""

    def __call__(self, context: PooledSandboxCreateContext) -> SandboxSync: ...


class AsyncPooledSandboxCreator(Protocol):
    """Creates one sandbox for an async pool (instead of ``Sandbox.create`` from the spec)."""

    async def __call__(self, context: PooledSandboxCreateContext) -> Sandbox: ...


@dataclass(frozen=True)
class PoolSnapshot:
    state: PoolState
    lifecycle_state: PoolLifecycleState
    idle_count: int
    max_idle: int
    failure_count: int
    backoff_active: bool
    last_error: Optional[str]
    in_flight_operations: int


class PoolStateStore(Protocol):
    """Where pool instances share idle membership, the primary lock, ``max_idle``, the idle
    TTL and the destroy state. ``try_take_idle`` must hand one id to one caller only.

    Stores may also offer ``try_take_idle_min_ttl`` and ``reap_expired_idle_min_ttl``
    (near-expiry aware); the pool falls back to the plain methods when they are missing.
    """

    def try_take_idle(self, pool_name: str) -> Optional[str]: ...

    def put_idle(self, pool_name: str, sandbox_id: str) -> None: ...

    def remove_idle(self, pool_name: str, sandbox_id: str) -> None: ...

    def try_acquire_primary_lock(self, pool_name: str, owner_id: str, ttl: timedelta) -> bool: ...

    def renew_primary_lock(self, pool_name: str, owner_id: str, ttl: timedelta) -> bool: ...

    def release_primary_lock(self, pool_name: str, owner_id: str) -> None: ...

    def reap_expired_idle(self, pool_name: str, now: datetime) -> None: ...

    def snapshot_counters(self, pool_name: str) -> StoreCounters: ...

    def snapshot_idle_entries(self, pool_name: str) -> List[IdleEntry]: ...

    def get_max_idle(self, pool_name: str) -> Optional[int]: ...

    def set_max_idle(self, pool_name: str, max_idle: int) -> None: ...

    def set_idle_entry_ttl(self, pool_name: str, idle_ttl: timedelta) -> None: ...

    def get_destroy_state(self, pool_name: str) -> PoolDestroyState: ...

    def begin_destroy(self, pool_name: str, owner_id: str) -> None: ...

    def clear_pool_state(self, pool_name: str) -> None: ...

    def mark_destroyed(self, pool_name: str, owner_id: str, tombstone_ttl: Optional[timedelta]) -> None: ...


class AsyncPoolStateStore(Protocol):
    """The asyncio twin of :class:`PoolStateStore`."""

    async def try_take_idle(self, pool_name: str) -> Optional[str]: ...

    async def put_idle(self, pool_name: str, sandbox_id: str) -> None: ...

    async def remove_idle(self, pool_name: str, sandbox_id: str) -> None: ...

    async def try_acquire_primary_lock(self, pool_name: str, owner_id: str, ttl: timedelta) -> bool: ...

    async def renew_primary_lock(self, pool_name: str, owner_id: str, ttl: timedelta) -> bool: ...

    async def release_primary_lock(self, pool_name: str, owner_id: str) -> None: ...

    async def reap_expired_idle(self, pool_name: str, now: datetime) -> None: ...

    async def snapshot_counters(self, pool_name: str) -> StoreCounters: ...

    async def snapshot_idle_entries(self, pool_name: str) -> List[IdleEntry]: ...

    async def get_max_idle(self, pool_name: str) -> Optional[int]: ...

    async def set_max_idle(self, pool_name: str, max_idle: int) -> None: ...

    async def set_idle_entry_ttl(self, pool_name: str, idle_ttl: timedelta) -> None: ...

    async def get_destroy_state(self, pool_name: str) -> PoolDestroyState: ...

    async def begin_destroy(self, pool_name: str, owner_id: str) -> None: ...

    async def clear_pool_state(self, pool_name: str) -> None: ...

    async def mark_destroyed(self, pool_name: str, owner_id: str, tombstone_ttl: Optional[timedelta]) -> None: ...


@dataclass(frozen=True)
class PoolCreationSpec:
    """How the pool creates its sandboxes (the ``Sandbox.create`` arguments it passes)."""

    image: Union[SandboxImageSpec, str]
    entrypoint: Optional[List[str]] = None
    resource: Optional[dict[str, str]] = None
    env: Optional[dict[str, str]] = None
    metadata: Optional[dict[str, str]] = None
    extensions: Optional[dict[str, str]] = None
    network_policy: Optional[NetworkPolicy] = None
    platform: Optional[PlatformSpec] = None
    secure_access: bool = False
    volumes: Optional[List[Volume]] = None


# Default near-expiry threshold: min(60 s, idle_timeout / 2), so short idle timeouts
# scale it down instead of failing validation.
_DEFAULT_MIN_REMAINING_TTL_CAP = timedelta(seconds=60)


def _validate_pool_config(config: Any) -> None:
    """Checks one ``PoolConfig``/``AsyncPoolConfig`` and fills ``owner_id`` and
    ``acquire_min_remaining_ttl`` (both are frozen dataclasses with the same fields)."""
    owner_id = config.owner_id or f"pool-owner-{uuid4()}"
    object.__setattr__(config, "owner_id", owner_id)
    _require_text(config.pool_name, "pool_name must not be blank")
    _require_text(owner_id, "owner_id must not be blank")
    if config.max_idle < 0:
        raise ValueError("max_idle must be >= 0")
    for name in ("warmup_create_qps", "warmup_concurrency", "degraded_threshold"):
        if getattr(config, name) <= 0:
            raise ValueError(f"{name} must be positive")
    for name in (
        "primary_lock_ttl",
        "acquire_ready_timeout",
        "acquire_health_check_polling_interval",
        "warmup_ready_timeout",
        "warmup_health_check_polling_interval",
        "warmup_post_prepare_health_check_timeout",
        "idle_timeout",
    ):
        _require_positive(getattr(config, name), f"{name} must be positive")
    _require_non_negative(
        config.warmup_health_check_initial_delay, "warmup_health_check_initial_delay must be non-negative"
    )
    _require_non_negative(config.drain_timeout, "drain_timeout must be non-negative")
    if config.max_acquire_retries < 1:
        raise ValueError("max_acquire_retries must be >= 1")
    min_ttl = config.acquire_min_remaining_ttl
    if min_ttl is None:
        min_ttl = min(_DEFAULT_MIN_REMAINING_TTL_CAP, config.idle_timeout / 2)
        object.__setattr__(config, "acquire_min_remaining_ttl", min_ttl)
    _require_non_negative(min_ttl, "acquire_min_remaining_ttl must be non-negative")
    if min_ttl >= config.idle_timeout:
        # Every freshly warmed entry would fail the threshold and be discarded.
        raise ValueError(
            f"acquire_min_remaining_ttl ({min_ttl}) must be strictly less than idle_timeout ({config.idle_timeout})"
        )


@dataclass(frozen=True)
class PoolConfig:
    """Validated configuration of a :class:`~opensandbox.sync.pool.SandboxPoolSync`."""

    pool_name: str
    max_idle: int
    state_store: PoolStateStore
    connection_config: ConnectionConfigSync
    creation_spec: PoolCreationSpec
    owner_id: Optional[str] = None
    warmup_create_qps: int = 10
    warmup_concurrency: int = 128
    primary_lock_ttl: timedelta = timedelta(seconds=60)
    degraded_threshold: int = 3
    acquire_ready_timeout: timedelta = timedelta(seconds=30)
    acquire_health_check_polling_interval: timedelta = timedelta(milliseconds=200)
    acquire_health_check: Optional[Callable[[SandboxSync], bool]] = None
    acquire_skip_health_check: bool = False
    warmup_ready_timeout: timedelta = timedelta(seconds=30)
    warmup_health_check_initial_delay: timedelta = timedelta(0)
    warmup_health_check_polling_interval: timedelta = timedelta(milliseconds=500)
    warmup_health_check: Optional[Callable[[SandboxSync], bool]] = None
    warmup_sandbox_preparer: Optional[Callable[[SandboxSync], None]] = None
    warmup_post_prepare_health_check: Optional[Callable[[SandboxSync], bool]] = None
    warmup_post_prepare_health_check_timeout: timedelta = timedelta(seconds=30)
    warmup_skip_health_check: bool = False
    idle_timeout: timedelta = timedelta(hours=24)
    drain_timeout: timedelta = timedelta(seconds=30)
    acquire_min_remaining_ttl: Optional[timedelta] = None
    sandbox_creator: Optional[PooledSandboxCreator] = None
    max_acquire_retries: int = 3

    def __post_init__(self) -> None:
        _validate_pool_config(self)

    def with_max_idle(self, max_idle: int) -> PoolConfig:
        return replace(self, max_idle=max_idle)


@dataclass(frozen=True)
class AsyncPoolConfig:
    """Validated configuration of a :class:`~opensandbox.pool_async.SandboxPoolAsync`."""

    pool_name: str
    max_idle: int
    state_store: AsyncPoolStateStore
    connection_config: ConnectionConfig
    creation_spec: PoolCreationSpec
    owner_id: Optional[str] = None
    warmup_create_qps: int = 10
    warmup_concurrency: int = 128
    primary_lock_ttl: timedelta = timedelta(seconds=60)
    degraded_threshold: int = 3
    acquire_ready_timeout: timedelta = timedelta(seconds=30)
    acquire_health_check_polling_interval: timedelta = timedelta(milliseconds=200)
    acquire_health_check: Optional[Callable[[Sandbox], Awaitable[bool]]] = None
    acquire_skip_health_check: bool = False
    warmup_ready_timeout: timedelta = timedelta(seconds=30)
    warmup_health_check_initial_delay: timedelta = timedelta(0)
    warmup_health_check_polling_interval: timedelta = timedelta(milliseconds=500)
    warmup_health_check: Optional[Callable[[Sandbox], Awaitable[bool]]] = None
    warmup_sandbox_preparer: Optional[Callable[[Sandbox], Awaitable[None]]] = None
    warmup_post_prepare_health_check: Optional[Callable[[Sandbox], Awaitable[bool]]] = None
    warmup_post_prepare_health_check_timeout: timedelta = timedelta(seconds=30)
    warmup_skip_health_check: bool = False
    idle_timeout: timedelta = timedelta(hours=24)
    drain_timeout: timedelta = timedelta(seconds=30)
    acquire_min_remaining_ttl: Optional[timedelta] = None
    sandbox_creator: Optional[AsyncPooledSandboxCreator] = None
    max_acquire_retries: int = 3

    def __post_init__(self) -> None:
        _validate_pool_config(self)

    def with_max_idle(self, max_idle: int) -> AsyncPoolConfig:
        return replace(self, max_idle=max_idle)


def _uses_min_ttl(min_remaining_ttl: Optional[timedelta]) -> bool:
    return min_remaining_ttl is not None and min_remaining_ttl.total_seconds() > 0


def try_take_idle_with_min_ttl(
    store: PoolStateStore, pool_name: str, min_remaining_ttl: Optional[timedelta]
) -> TakeIdleResult:
    """``store.try_take_idle_min_ttl`` when the store has it, else ``try_take_idle``."""
    method = getattr(store, "try_take_idle_min_ttl", None)
    if _uses_min_ttl(min_remaining_ttl) and callable(method):
        return cast(TakeIdleResult, method(pool_name, min_remaining_ttl))
    return TakeIdleResult(sandbox_id=store.try_take_idle(pool_name))


async def try_take_idle_with_min_ttl_async(
    store: AsyncPoolStateStore, pool_name: str, min_remaining_ttl: Optional[timedelta]
) -> TakeIdleResult:
    """The asyncio twin of :func:`try_take_idle_with_min_ttl`."""
    method = getattr(store, "try_take_idle_min_ttl", None)
    if _uses_min_ttl(min_remaining_ttl) and callable(method):
        return cast(TakeIdleResult, await method(pool_name, min_remaining_ttl))
    return TakeIdleResult(sandbox_id=await store.try_take_idle(pool_name))


def reap_expired_idle_with_min_ttl(
    store: PoolStateStore, pool_name: str, now: datetime, min_remaining_ttl: Optional[timedelta]
) -> Tuple[str, ...]:
    """Reaps expired (and, when the store supports it, near-expiry) idle entries; returns
    the ids of the near-expiry ones, still alive on the server, for the caller to kill."""
    method = getattr(store, "reap_expired_idle_min_ttl", None)
    if _uses_min_ttl(min_remaining_ttl) and callable(method):
        return tuple(cast("Optional[Iterable[str]]", method(pool_name, now, min_remaining_ttl)) or ())
    store.reap_expired_idle(pool_name, now)
    return ()


async def reap_expired_idle_with_min_ttl_async(
    store: AsyncPoolStateStore, pool_name: str, now: datetime, min_remaining_ttl: Optional[timedelta]
) -> Tuple[str, ...]:
    """The asyncio twin of :func:`reap_expired_idle_with_min_ttl`."""
    method = getattr(store, "reap_expired_idle_min_ttl", None)
    if _uses_min_ttl(min_remaining_ttl) and callable(method):
        return tuple(cast("Optional[Iterable[str]]", await method(pool_name, now, min_remaining_ttl)) or ())
    await store.reap_expired_idle(pool_name, now)
    return ()


__all__ = [
    "AcquirePolicy",
    "AsyncPoolConfig",
    "AsyncPoolStateStore",
    "AsyncPooledSandboxCreator",
    "IdleEntry",
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
    "PooledSandboxCreateContext",
    "PooledSandboxCreateReason",
    "PooledSandboxCreator",
    "StoreCounters",
    "TakeIdleResult",
    "effective_max_idle_attempts",
    "policy_falls_through_to_direct_create",
]
