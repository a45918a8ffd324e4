"""``SandboxPoolAsync``: a client-side warm pool of sandboxes on asyncio.

One instance per process holds the pool's *primary lock* in the state store and keeps
``max_idle`` ready sandboxes (warmup: create, readiness, optional preparer, renew to
``idle_timeout``, then commit the id to the store). Every instance can ``acquire``: take an
idle id from the store (one taker per id), connect, check it, renew it to the caller's
timeout; an unusable candidate is killed and, by policy, the next one is tried or a
sandbox is created directly.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from datetime import timedelta
from typing import Awaitable, Callable, List, Optional, Set, Tuple

from opensandbox._async_pool_store import InMemoryAsyncPoolStateStore
from opensandbox._pool_core import (
    CREATE_ADMISSION_HEADROOM,
    RECONCILE_INTERVAL_SECONDS,
    ReconcileState,
    now_utc,
    plan_replenish,
)
from opensandbox._pool_store import InMemoryPoolStateStore
from opensandbox.config.connection import ConnectionConfig
from opensandbox.exceptions import (
    PoolAcquireFailedException,
    PoolDestroyedException,
    PoolEmptyException,
    PoolNotRunningException,
    PoolStateStoreUnavailableException,
    SandboxApiException,
    SandboxReadyTimeoutException,
)
from opensandbox.manager import SandboxManager
from opensandbox.pool_types import (
    AcquirePolicy,
    AsyncPoolConfig,
    AsyncPooledSandboxCreator,
    AsyncPoolStateStore,
    IdleEntry,
    PoolCreationSpec,
    PoolDestroyState,
    PooledSandboxCreateContext,
    PooledSandboxCreateReason,
    PoolLifecycleState,
    PoolSnapshot,
    PoolState,
    effective_max_idle_attempts,
    policy_falls_through_to_direct_create,
    reap_expired_idle_with_min_ttl_async,
    try_take_idle_with_min_ttl_async,
)
from opensandbox.sandbox import Sandbox

logger = logging.getLogger(__name__)

_RELEASE_ALL_IDLE_CONCURRENCY = 50
# How long shutdown waits for the scheduler and heartbeat tasks before cancelling them.
_TASK_JOIN_TIMEOUT_SECONDS = 5.0


def _is_auth_error(exc: BaseException) -> bool:
    """401/403 from connect: re-probing the next candidate cannot fix credentials."""
    return isinstance(exc, SandboxApiException) and exc.status_code in (401, 403)


class SandboxPoolAsync:
    """Client-side asyncio sandbox pool (same parameters and defaults as the official 1.1.1)."""

    def __init__(
        self,
        *,
        pool_name: str,
        max_idle: int,
        state_store: AsyncPoolStateStore,
        connection_config: ConnectionConfig,
        creation_spec: PoolCreationSpec,
        owner_id: Optional[str] = None,
        warmup_create_qps: int = 10,
        warmup_concurrency: int = 128,
        primary_lock_ttl: timedelta = timedelta(seconds=60),
        degraded_threshold: int = 3,
        acquire_ready_timeout: timedelta = timedelta(seconds=30),
        acquire_health_check_polling_interval: timedelta = timedelta(milliseconds=200),
        acquire_health_check: Optional[Callable[[Sandbox], Awaitable[bool]]] = None,
        acquire_skip_health_check: bool = False,
        warmup_ready_timeout: timedelta = timedelta(seconds=30),
        warmup_health_check_initial_delay: timedelta = timedelta(0),
        warmup_health_check_polling_interval: timedelta = timedelta(milliseconds=500),
        warmup_health_check: Optional[Callable[[Sandbox], Awaitable[bool]]] = None,
        warmup_sandbox_preparer: Optional[Callable[[Sandbox], Awaitable[None]]] = None,
        warmup_post_prepare_health_check: Optional[Callable[[Sandbox], Awaitable[bool]]] = None,
        warmup_post_prepare_health_check_timeout: timedelta = timedelta(seconds=30),
        warmup_skip_health_check: bool = False,
        idle_timeout: timedelta = timedelta(hours=24),
        drain_timeout: timedelta = timedelta(seconds=30),
        acquire_min_remaining_ttl: Optional[timedelta] = None,
        max_acquire_retries: int = 3,
        sandbox_manager_factory: Callable[[ConnectionConfig], Awaitable[SandboxManager]] = SandboxManager.create,
        sandbox_factory: type[Sandbox] = Sandbox,
        sandbox_creator: Optional[AsyncPooledSandboxCreator] = None,
    ) -> None:
        try_take = getattr(state_store, "try_take_idle", None)
        if isinstance(state_store, InMemoryPoolStateStore) or (
            type(state_store).__name__ == "RedisPoolStateStore" and not inspect.iscoroutinefunction(try_take)
        ):
            raise TypeError(
                f"SandboxPoolAsync needs an async state store, got the blocking {type(state_store).__name__} "
                "(use InMemoryAsyncPoolStateStore or AsyncRedisPoolStateStore)"
            )
        self._config = AsyncPoolConfig(
            pool_name=pool_name,
            max_idle=max_idle,
            state_store=state_store,
            connection_config=connection_config,
            creation_spec=creation_spec,
            owner_id=owner_id,
            warmup_create_qps=warmup_create_qps,
            warmup_concurrency=warmup_concurrency,
            primary_lock_ttl=primary_lock_ttl,
            degraded_threshold=degraded_threshold,
            acquire_ready_timeout=acquire_ready_timeout,
            acquire_health_check_polling_interval=acquire_health_check_polling_interval,
            acquire_health_check=acquire_health_check,
            acquire_skip_health_check=acquire_skip_health_check,
            warmup_ready_timeout=warmup_ready_timeout,
            warmup_health_check_initial_delay=warmup_health_check_initial_delay,
            warmup_health_check_polling_interval=warmup_health_check_polling_interval,
            warmup_health_check=warmup_health_check,
            warmup_sandbox_preparer=warmup_sandbox_preparer,
            warmup_post_prepare_health_check=warmup_post_prepare_health_check,
            warmup_post_prepare_health_check_timeout=warmup_post_prepare_health_check_timeout,
            warmup_skip_health_check=warmup_skip_health_check,
            idle_timeout=idle_timeout,
            drain_timeout=drain_timeout,
            acquire_min_remaining_ttl=acquire_min_remaining_ttl,
            sandbox_creator=sandbox_creator,
            max_acquire_retries=max_acquire_retries,
        )
        self._store = state_store
        self._owner_id = str(self._config.owner_id)
        self._manager_factory = sandbox_manager_factory
        self._sandbox_factory = sandbox_factory
        self._health = ReconcileState(degraded_threshold)
        self._current_max_idle = max_idle
        self._lifecycle_state = PoolLifecycleState.NOT_STARTED
        self._lifecycle_lock = asyncio.Lock()
        self._reconcile_lock = asyncio.Lock()
        self._in_flight = 0
        self._in_flight_changed = asyncio.Condition()
        self._stop_event = asyncio.Event()
        self._scheduler_task: Optional[asyncio.Task[None]] = None
        self._heartbeat_task: Optional[asyncio.Task[None]] = None
        self._manager: Optional[SandboxManager] = None
        self._warmup_tasks: Set[asyncio.Task[None]] = set()
        self._cleanup_tasks: Set[asyncio.Task[None]] = set()
        # A warmup commits only if the run (start → shutdown) and the leadership term it
        # was submitted under are still current: a lost lock or a restart retires it.
        self._run_generation = 0
        self._leader_epoch = 0
        self._primary_owned = False
        self._accept_warmup_commits = False
        self._post_create_gate = asyncio.Semaphore(warmup_concurrency)
        self._create_gate = asyncio.Semaphore(self._create_admission())

    def _create_admission(self) -> int:
        return max(1, math.ceil(self._config.warmup_create_qps * CREATE_ADMISSION_HEADROOM))

    # ----- lifecycle -----

    async def start(self) -> None:
        """Starts reconciling (idempotent). Raises ``PoolDestroyedException`` for a destroyed name."""
        async with self._lifecycle_lock:
            if self._lifecycle_state in (PoolLifecycleState.RUNNING, PoolLifecycleState.STARTING):
                return
            self._lifecycle_state = PoolLifecycleState.STARTING
            try:
                await self._ensure_namespace_active()
                if self._config.primary_lock_ttl <= self._config.warmup_ready_timeout:
                    logger.warning(
                        "pool %s: primary_lock_ttl %s <= warmup_ready_timeout %s; the lock may lapse during a warmup",
                        self._config.pool_name,
                        self._config.primary_lock_ttl,
                        self._config.warmup_ready_timeout,
                    )
                self._manager = await self._manager_factory(self._config.connection_config)
                await self._store.set_idle_entry_ttl(self._config.pool_name, self._config.idle_timeout)
                await self._store.set_max_idle(self._config.pool_name, self._current_max_idle)
                self._run_generation += 1
                self._primary_owned = False
                self._accept_warmup_commits = True
                self._post_create_gate = asyncio.Semaphore(self._config.warmup_concurrency)
                self._create_gate = asyncio.Semaphore(self._create_admission())
                self._stop_event = asyncio.Event()
                self._lifecycle_state = PoolLifecycleState.RUNNING
                name = self._config.pool_name
                self._scheduler_task = asyncio.create_task(
                    self._run_scheduler(self._stop_event), name=f"sandbox-pool-reconcile-{name}"
                )
                self._heartbeat_task = asyncio.create_task(
                    self._run_heartbeat(self._stop_event, self._run_generation), name=f"sandbox-pool-heartbeat-{name}"
                )
            except BaseException:
                await self._stop_reconcile(wait_for_background=True)
                await self._close_manager()
                self._lifecycle_state = PoolLifecycleState.STOPPED
                raise

    async def shutdown(self, graceful: bool = True) -> None:
        """Stops reconciling and releases the primary lock. ``graceful`` waits up to
        ``drain_timeout`` for in-flight acquires and warmups; idle sandboxes stay in the
        store for other instances (``release_all_idle`` kills them)."""
        async with self._lifecycle_lock:
            if self._lifecycle_state in (PoolLifecycleState.NOT_STARTED, PoolLifecycleState.STOPPED):
                self._lifecycle_state = PoolLifecycleState.STOPPED
                return
            run_generation = self._run_generation
            if not graceful:
                await self._stop_now()
                return
            self._lifecycle_state = PoolLifecycleState.DRAINING
            await self._stop_scheduler()
        if not await self._await_in_flight_drain(self._config.drain_timeout):
            logger.warning(
                "pool %s: graceful shutdown gave up waiting for %d in-flight operation(s) after %s",
                self._config.pool_name,
                self._in_flight,
                self._config.drain_timeout,
            )
        async with self._lifecycle_lock:
            if self._run_generation != run_generation:
                return  # a start() during the drain owns the pool now
            await self._stop_now()

    async def _stop_now(self) -> None:
        self._accept_warmup_commits = False
        await self._stop_reconcile(wait_for_background=False)
        self._lifecycle_state = PoolLifecycleState.STOPPED
        await self._close_manager()

    async def __aenter__(self) -> SandboxPoolAsync:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown(graceful=True)

    # ----- acquire -----

    async def acquire(
        self, sandbox_timeout: Optional[timedelta] = None, policy: AcquirePolicy = AcquirePolicy.DIRECT_CREATE
    ) -> Sandbox:
        """A ready sandbox: an idle one from the pool, else (by ``policy``) a new one.
        ``sandbox_timeout`` renews it for the caller; the caller owns it (kill it when done)."""
        async with self._lifecycle_lock:
            if self._lifecycle_state != PoolLifecycleState.RUNNING:
                state = self._lifecycle_state
                await self._raise_if_destroyed()
                raise PoolNotRunningException(f"Cannot acquire when pool state is {state.value}")
            generation = self._run_generation
        await self._begin_operation()
        try:
            return await self._acquire(sandbox_timeout, policy, generation)
        finally:
            await self._end_operation()

    async def _acquire(self, sandbox_timeout: Optional[timedelta], policy: AcquirePolicy, generation: int) -> Sandbox:
        await self._ensure_run_active(generation)
        await self._ensure_namespace_active_for(policy)
        pool_name = self._config.pool_name
        max_attempts = effective_max_idle_attempts(policy, self._config.max_acquire_retries)
        condemned: List[str] = []  # alive near-expiry ids skipped on take: killed in the background
        last_id: Optional[str] = None
        last_failure: Optional[BaseException] = None
        tried = 0
        drained = False
        try:
            while tried < max_attempts:
                await self._ensure_run_active(generation)
                try:
                    taken = await try_take_idle_with_min_ttl_async(
                        self._store, pool_name, self._config.acquire_min_remaining_ttl
                    )
                except PoolStateStoreUnavailableException:
                    # A store outage degrades to plain creation where the policy creates anyway,
                    # so the pool is never less available than creating sandboxes directly.
                    if not policy_falls_through_to_direct_create(policy):
                        raise
                    logger.warning("pool %s: state store unavailable, creating directly", pool_name)
                    drained = True
                    break
                condemned.extend(taken.discarded_alive_sandbox_ids)
                if taken.sandbox_id is None:
                    drained = True
                    break
                tried += 1
                last_id = taken.sandbox_id
                try:
                    sandbox = await self._connect_idle(taken.sandbox_id)
                except (asyncio.CancelledError, PoolDestroyedException):
                    condemned.append(taken.sandbox_id)
                    raise
                except Exception as exc:
                    condemned.append(taken.sandbox_id)
                    if _is_auth_error(exc):
                        raise
                    # Stale (killed, expired) or unhealthy: drop it and try the next one.
                    logger.info("pool %s: idle sandbox %s unusable: %s", pool_name, taken.sandbox_id, exc)
                    last_failure = exc
                    await self._store.remove_idle(pool_name, taken.sandbox_id)
                    await self._ensure_run_active(generation)
                    await self._ensure_namespace_active()
                    continue
                return await self._finish_acquire(sandbox, sandbox_timeout, generation)
        finally:
            self._schedule_kills(tuple(condemned))

        if tried == 0:
            reason = "idle buffer empty"
        elif not drained:
            reason = f"idle connect failed for {tried} candidate(s); last sandbox_id={last_id} (stale or unreachable)"
        else:
            reason = (
                f"idle connect failed for sandbox_id={last_id}; idle buffer drained before "
                f"reaching max_acquire_retries={max_attempts}"
            )
        if not policy_falls_through_to_direct_create(policy):
            message = f"Cannot acquire: {reason}; policy is {policy.value}"
            if tried:
                raise PoolAcquireFailedException(message, last_failure)
            raise PoolEmptyException(message)
        await self._ensure_run_active(generation)
        try:
            sandbox = await self._create(PooledSandboxCreateReason.DIRECT_CREATE, policy)
        except PoolDestroyedException:
            raise
        except Exception as exc:
            # A shutdown that retired this run while the create was in flight wins.
            try:
                await self._ensure_run_active(generation)
            except PoolNotRunningException as retired:
                raise retired from exc
            raise
        return await self._finish_acquire(sandbox, sandbox_timeout, generation, policy)

    async def _connect_idle(self, sandbox_id: str) -> Sandbox:
        return await self._sandbox_factory.connect(
            sandbox_id,
            connection_config=self._config.connection_config,
            health_check=self._config.acquire_health_check,
            connect_timeout=self._config.acquire_ready_timeout,
            health_check_polling_interval=self._config.acquire_health_check_polling_interval,
            skip_health_check=self._config.acquire_skip_health_check,
        )

    async def _finish_acquire(
        self,
        sandbox: Sandbox,
        sandbox_timeout: Optional[timedelta],
        generation: int,
        policy: Optional[AcquirePolicy] = None,
    ) -> Sandbox:
        # The caller owns the sandbox only once renew and both fences pass; until then
        # any failure (cancellation included) kills it.
        try:
            if sandbox_timeout is not None:
                await sandbox.renew(sandbox_timeout)
            await self._ensure_namespace_active_after_create(sandbox, policy)
            await self._ensure_run_active(generation)
        except BaseException:
            await self._kill_and_close_shielded(sandbox)
            raise
        return sandbox

    # ----- other public operations -----

    async def resize(self, max_idle: int) -> None:
        """Sets the shared idle target (every instance on the store follows it)."""
        if max_idle < 0:
            raise ValueError("max_idle must be >= 0")
        await self._ensure_namespace_active()
        await self._store.set_max_idle(self._config.pool_name, max_idle)
        self._current_max_idle = max_idle

    async def release_all_idle(self) -> int:
        """Takes every idle sandbox out of the store and kills it, one by one; returns the count."""
        return await self._release_idle(1)

    async def release_all_idle_parallel(self, max_workers: int = _RELEASE_ALL_IDLE_CONCURRENCY) -> int:
        """:meth:`release_all_idle` with up to ``max_workers`` kills at once; the cleanup
        finishes even if the caller is cancelled."""
        if max_workers <= 0:
            raise ValueError("max_workers must be positive")
        task = asyncio.ensure_future(self._release_idle(max_workers))
        cancelled: Optional[asyncio.CancelledError] = None
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError as exc:
                cancelled = cancelled or exc
            except Exception:
                break
        if cancelled is not None:
            raise cancelled
        return task.result()

    async def _release_idle(self, workers: int) -> int:
        pool_name = self._config.pool_name
        ids: List[str] = []
        drain_error: Optional[Exception] = None
        while True:
            try:
                sandbox_id = await self._store.try_take_idle(pool_name)
            except Exception as exc:
                drain_error = exc
                break
            if sandbox_id is None:
                break
            ids.append(sandbox_id)
        if ids:
            manager = self._manager
            temporary = manager is None
            if manager is None:
                try:
                    manager = await self._manager_factory(self._config.connection_config)
                except Exception:
                    # The ids already left the store: name them so they can be killed by hand.
                    logger.error("pool %s: no manager to kill released idle sandboxes %s", pool_name, ids)
                    raise
            gate = asyncio.Semaphore(workers)

            async def kill(sandbox_id: str) -> None:
                async with gate:
                    await self._kill_best_effort(sandbox_id, manager)

            try:
                await asyncio.gather(*(kill(i) for i in ids))
            finally:
                if temporary:
                    await manager.close()
        if drain_error is not None:
            raise drain_error
        return len(ids)

    async def snapshot(self) -> PoolSnapshot:
        lifecycle = self._lifecycle_state
        if lifecycle in (PoolLifecycleState.NOT_STARTED, PoolLifecycleState.STOPPED):
            state = PoolState.STOPPED
        elif lifecycle == PoolLifecycleState.DRAINING:
            state = PoolState.DRAINING
        else:
            state = self._health.state
        counters = await self._store.snapshot_counters(self._config.pool_name)
        return PoolSnapshot(
            state=state,
            lifecycle_state=lifecycle,
            idle_count=counters.idle_count,
            max_idle=await self._resolve_max_idle(),
            failure_count=self._health.failure_count,
            backoff_active=self._health.is_backoff_active(),
            last_error=self._health.last_error,
            in_flight_operations=self._in_flight,
        )

    async def snapshot_idle_entries(self) -> List[IdleEntry]:
        return await self._store.snapshot_idle_entries(self._config.pool_name)

    # ----- reconcile -----

    async def _run_scheduler(self, stop: asyncio.Event) -> None:
        # An empty target waits one interval first (nothing to warm; resize may come).
        if self._config.max_idle == 0 and await self._stopped_within(stop, RECONCILE_INTERVAL_SECONDS):
            return
        while not stop.is_set():
            await self._reconcile_tick()
            if await self._stopped_within(stop, RECONCILE_INTERVAL_SECONDS):
                return

    @staticmethod
    async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
        try:
            await asyncio.wait_for(stop.wait(), timeout=seconds)
            return True
        except asyncio.TimeoutError:
            return False

    async def _reconcile_tick(self) -> None:
        if self._lifecycle_state != PoolLifecycleState.RUNNING:
            return
        async with self._reconcile_lock:
            if self._lifecycle_state != PoolLifecycleState.RUNNING:
                return
            await self._begin_operation()
            try:
                pool_name = self._config.pool_name
                if await self._store.get_destroy_state(pool_name) != PoolDestroyState.ACTIVE:
                    await self._stop_after_destroyed()
                    return
                ttl = self._config.primary_lock_ttl
                if not await self._store.try_acquire_primary_lock(pool_name, self._owner_id, ttl):
                    self._mark_primary_lost()
                    return
                self._mark_primary_acquired()
                await self._replenish_once()
            except Exception as exc:
                self._mark_primary_lost()
                logger.error("pool %s: reconcile tick failed", self._config.pool_name, exc_info=exc)
            finally:
                await self._end_operation()

    async def _replenish_once(self) -> None:
        pool_name, ttl = self._config.pool_name, self._config.primary_lock_ttl
        for sandbox_id in await reap_expired_idle_with_min_ttl_async(
            self._store, pool_name, now_utc(), self._config.acquire_min_remaining_ttl
        ):
            # Evicted for too little TTL but still alive on the server: do not let it linger.
            await self._kill_best_effort(sandbox_id)
        counters = await self._store.snapshot_counters(pool_name)
        to_remove, to_create = plan_replenish(
            counters.idle_count,
            await self._resolve_max_idle(),
            len(self._warmup_tasks),
            self._config.warmup_concurrency,
            self._config.warmup_create_qps,
        )
        for _ in range(to_remove):
            if not await self._store.renew_primary_lock(pool_name, self._owner_id, ttl):
                return
            surplus = await self._store.try_take_idle(pool_name)
            if surplus is None:
                break
            await self._kill_best_effort(surplus)
        if not await self._store.renew_primary_lock(pool_name, self._owner_id, ttl):
            self._mark_primary_lost()
            return
        for _ in range(to_create):
            task = asyncio.create_task(
                self._run_warmup(self._run_generation, self._leader_epoch), name=f"sandbox-pool-warmup-{pool_name}"
            )
            self._warmup_tasks.add(task)
            task.add_done_callback(self._warmup_tasks.discard)

    async def _run_heartbeat(self, stop: asyncio.Event, generation: int) -> None:
        interval = max(0.001, min(1.0, self._config.primary_lock_ttl.total_seconds() / 3))
        while generation == self._run_generation:
            if await self._stopped_within(stop, interval):
                return
            if not self._primary_owned or self._lifecycle_state not in (
                PoolLifecycleState.RUNNING,
                PoolLifecycleState.DRAINING,
            ):
                continue
            try:
                if not await self._store.renew_primary_lock(
                    self._config.pool_name, self._owner_id, self._config.primary_lock_ttl
                ):
                    self._mark_primary_lost()
            except Exception as exc:
                logger.warning("pool %s: primary lock heartbeat failed: %s", self._config.pool_name, exc)

    def _mark_primary_acquired(self) -> None:
        if not self._primary_owned:
            self._primary_owned = True
            self._leader_epoch += 1

    def _mark_primary_lost(self) -> None:
        if not self._primary_owned:
            return
        self._primary_owned = False
        self._leader_epoch += 1
        current = asyncio.current_task()
        for task in tuple(self._warmup_tasks):
            if task is not current:
                task.cancel()

    # ----- warmup -----

    async def _run_warmup(self, generation: int, leader_epoch: int) -> None:
        await self._begin_operation()
        sandbox: Optional[Sandbox] = None
        committed = False
        stage = "create"
        try:
            await self._ensure_namespace_active()
            async with self._create_gate:
                sandbox = await self._create(PooledSandboxCreateReason.WARMUP)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self._config.warmup_ready_timeout.total_seconds()
            if not self._config.warmup_skip_health_check:
                stage = "readiness"
                delay = self._config.warmup_health_check_initial_delay.total_seconds()
                if delay > 0:
                    await asyncio.sleep(min(delay, self._config.warmup_ready_timeout.total_seconds()))
                await self._wait_until_healthy(sandbox, self._config.warmup_health_check, deadline, "warmup readiness")
            if self._config.warmup_sandbox_preparer is not None:
                stage = "prepare"
                async with self._post_create_gate:
                    await self._config.warmup_sandbox_preparer(sandbox)
            if self._config.warmup_post_prepare_health_check is not None:
                stage = "post-prepare readiness"
                timeout = self._config.warmup_post_prepare_health_check_timeout.total_seconds()
                await self._wait_until_healthy(
                    sandbox, self._config.warmup_post_prepare_health_check, loop.time() + timeout, stage
                )
            async with self._post_create_gate:
                stage = "renew"
                await sandbox.renew(self._config.idle_timeout)
                await self._ensure_namespace_active()
                stage = "commit"
                if not await self._can_commit_warmup(generation, leader_epoch):
                    return
                await self._store.put_idle(self._config.pool_name, sandbox.id)
                if not self._can_commit_locally(generation, leader_epoch):
                    await self._store.remove_idle(self._config.pool_name, sandbox.id)
                    return
            committed = True
            self._health.record_success()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._health.record_failure(f"warmup {stage} failed: {exc}")
            logger.warning("pool %s: warmup failed at %s: %s", self._config.pool_name, stage, exc)
        finally:
            try:
                if sandbox is not None:
                    if committed:
                        await sandbox.close()
                    else:
                        await self._kill_and_close_shielded(sandbox)
            finally:
                await self._end_operation()

    async def _wait_until_healthy(
        self,
        sandbox: Sandbox,
        health_check: Optional[Callable[[Sandbox], Awaitable[bool]]],
        deadline: float,
        stage: str,
    ) -> None:
        loop = asyncio.get_running_loop()
        last_error: Optional[Exception] = None
        while True:
            try:
                async with self._post_create_gate:
                    healthy = await (health_check(sandbox) if health_check is not None else sandbox.is_healthy())
                if healthy:
                    return
                last_error = None
            except Exception as exc:
                last_error = exc
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise SandboxReadyTimeoutException(f"Pool {stage} timed out: sandbox_id={sandbox.id}", last_error)
            await asyncio.sleep(min(remaining, self._config.warmup_health_check_polling_interval.total_seconds()))

    async def _can_commit_warmup(self, generation: int, leader_epoch: int) -> bool:
        if not self._can_commit_locally(generation, leader_epoch):
            return False
        if not await self._store.renew_primary_lock(
            self._config.pool_name, self._owner_id, self._config.primary_lock_ttl
        ):
            self._mark_primary_lost()
            return False
        return self._can_commit_locally(generation, leader_epoch)

    def _can_commit_locally(self, generation: int, leader_epoch: int) -> bool:
        return (
            generation == self._run_generation
            and leader_epoch == self._leader_epoch
            and self._primary_owned
            and self._accept_warmup_commits
            and self._lifecycle_state in (PoolLifecycleState.RUNNING, PoolLifecycleState.DRAINING)
        )

    # ----- creation -----

    async def _create(
        self, reason: PooledSandboxCreateReason, policy: AcquirePolicy = AcquirePolicy.DIRECT_CREATE
    ) -> Sandbox:
        """One new sandbox. Warmups check readiness themselves afterwards (with the warmup
        settings); a direct create waits for readiness like ``acquire`` does."""
        config = self._config
        warmup = reason == PooledSandboxCreateReason.WARMUP
        if not warmup:
            await self._ensure_namespace_active_for(policy)
        ready_timeout = config.warmup_ready_timeout if warmup else config.acquire_ready_timeout
        polling = (
            config.warmup_health_check_polling_interval if warmup else config.acquire_health_check_polling_interval
        )
        health_check = config.warmup_health_check if warmup else config.acquire_health_check
        skip = True if warmup else config.acquire_skip_health_check
        if config.sandbox_creator is not None:
            context = PooledSandboxCreateContext(
                pool_name=config.pool_name,
                owner_id=self._owner_id,
                idle_timeout=config.idle_timeout,
                reason=reason,
                ready_timeout=ready_timeout,
                health_check_polling_interval=polling,
                skip_health_check=skip,
                health_check=health_check,
                connection_config=config.connection_config,
            )
            return await config.sandbox_creator(context)
        spec = config.creation_spec
        return await self._sandbox_factory.create(
            spec.image,
            timeout=config.idle_timeout,
            ready_timeout=ready_timeout,
            env=spec.env,
            metadata=spec.metadata,
            resource=spec.resource,
            network_policy=spec.network_policy,
            platform=spec.platform,
            extensions=spec.extensions,
            secure_access=spec.secure_access,
            entrypoint=spec.entrypoint,
            volumes=spec.volumes,
            connection_config=config.connection_config,
            health_check=health_check,
            health_check_polling_interval=polling,
            skip_health_check=skip,
        )

    # ----- fences -----

    async def _ensure_namespace_active(self) -> None:
        state = await self._store.get_destroy_state(self._config.pool_name)
        if state != PoolDestroyState.ACTIVE:
            raise PoolDestroyedException(f"Pool namespace is {state.value}: pool_name={self._config.pool_name}")

    async def _ensure_namespace_active_for(self, policy: AcquirePolicy) -> None:
        """The destroy fence on the acquire path: with the store down, a creating policy
        assumes ACTIVE (it would create anyway); the others surface the outage."""
        try:
            await self._ensure_namespace_active()
        except PoolStateStoreUnavailableException:
            if not policy_falls_through_to_direct_create(policy):
                raise
            logger.warning("pool %s: state store unavailable, assuming the pool is active", self._config.pool_name)

    async def _ensure_namespace_active_after_create(self, sandbox: Sandbox, policy: Optional[AcquirePolicy]) -> None:
        try:
            await self._ensure_namespace_active()
        except PoolStateStoreUnavailableException:
            if policy is None or not policy_falls_through_to_direct_create(policy):
                raise
            logger.warning("pool %s: state store unavailable, keeping sandbox %s", self._config.pool_name, sandbox.id)

    async def _raise_if_destroyed(self) -> None:
        try:
            await self._ensure_namespace_active()
        except PoolDestroyedException:
            raise
        except Exception:
            return  # only a known destroy changes the error; the store's health does not

    async def _ensure_run_active(self, generation: int) -> None:
        if generation == self._run_generation and self._lifecycle_state == PoolLifecycleState.RUNNING:
            return
        state = self._lifecycle_state
        await self._raise_if_destroyed()
        raise PoolNotRunningException(
            f"Cannot acquire from a retired pool run: pool_name={self._config.pool_name} state={state.value}"
        )

    async def _stop_after_destroyed(self) -> None:
        async with self._lifecycle_lock:
            if self._lifecycle_state == PoolLifecycleState.STOPPED:
                return
            self._accept_warmup_commits = False
            await self._stop_reconcile(wait_for_background=False, join_scheduler=False)
            self._lifecycle_state = PoolLifecycleState.STOPPED
            await self._close_manager()

    # ----- helpers -----

    async def _resolve_max_idle(self) -> int:
        shared = await self._store.get_max_idle(self._config.pool_name)
        return self._current_max_idle if shared is None else shared

    async def _kill_best_effort(self, sandbox_id: str, manager: Optional[SandboxManager] = None) -> bool:
        manager = manager or self._manager
        if manager is None:
            return False
        try:
            await manager.kill_sandbox(sandbox_id)
            return True
        except Exception as exc:
            logger.warning("pool %s: killing sandbox %s failed: %s", self._config.pool_name, sandbox_id, exc)
            return False

    def _schedule_kills(self, sandbox_ids: Tuple[str, ...]) -> None:
        """Kills in the background, so ``acquire`` does not wait for N DELETEs; shutdown
        waits for (or cancels) them with the other background tasks."""
        if not sandbox_ids:
            return

        async def kill_all() -> None:
            await asyncio.gather(*(self._kill_best_effort(i) for i in sandbox_ids))

        task = asyncio.create_task(kill_all())
        self._cleanup_tasks.add(task)
        task.add_done_callback(self._cleanup_tasks.discard)

    async def _kill_and_close_shielded(self, sandbox: Sandbox) -> None:
        """Kills and closes ``sandbox``; a cancellation waits for the kill to finish first."""

        async def cleanup() -> None:
            try:
                await sandbox.kill()
            except Exception as exc:
                logger.warning("pool %s: killing sandbox %s failed: %s", self._config.pool_name, sandbox.id, exc)
            await sandbox.close()

        task = asyncio.ensure_future(cleanup())
        cancelled: Optional[asyncio.CancelledError] = None
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError as exc:
                cancelled = cancelled or exc
        if cancelled is not None:
            raise cancelled

    async def _begin_operation(self) -> None:
        async with self._in_flight_changed:
            self._in_flight += 1

    async def _end_operation(self) -> None:
        async with self._in_flight_changed:
            self._in_flight = max(0, self._in_flight - 1)
            if self._in_flight == 0:
                self._in_flight_changed.notify_all()

    async def _await_in_flight_drain(self, timeout: timedelta) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout.total_seconds()
        async with self._in_flight_changed:
            while self._in_flight > 0:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                try:
                    await asyncio.wait_for(self._in_flight_changed.wait(), remaining)
                except asyncio.TimeoutError:
                    return self._in_flight == 0
            return True

    async def _stop_scheduler(self) -> None:
        task = self._scheduler_task
        if task is None or task is asyncio.current_task():
            return
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        self._scheduler_task = None

    async def _join_or_cancel(self, task: Optional[asyncio.Task[None]]) -> None:
        if task is None or task is asyncio.current_task():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=_TASK_JOIN_TIMEOUT_SECONDS)
        except asyncio.TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _stop_reconcile(self, *, wait_for_background: bool, join_scheduler: bool = True) -> None:
        self._stop_event.set()
        if join_scheduler:
            await self._join_or_cancel(self._scheduler_task)
            self._scheduler_task = None
        await self._join_or_cancel(self._heartbeat_task)
        self._heartbeat_task = None
        background = [t for t in (*self._warmup_tasks, *self._cleanup_tasks) if t is not asyncio.current_task()]
        if not wait_for_background:
            for task in background:
                task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        try:
            await self._store.release_primary_lock(self._config.pool_name, self._owner_id)
        except Exception as exc:
            logger.warning("pool %s: releasing the primary lock failed: %s", self._config.pool_name, exc)
        self._mark_primary_lost()

    async def _close_manager(self) -> None:
        if self._manager is not None:
            await self._manager.close()
            self._manager = None


AsyncSandboxPool = SandboxPoolAsync

# InMemoryAsyncPoolStateStore is re-exported here, as the official module does.
__all__ = ["AsyncSandboxPool", "InMemoryAsyncPoolStateStore", "SandboxPoolAsync"]
