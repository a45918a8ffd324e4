"""``SandboxPoolSync``: the blocking client-side sandbox pool, on threads.

The same design as :mod:`opensandbox.pool_async` (read its docstring): a reconcile thread
ticks every second, a heartbeat thread renews the primary lock, each warmup runs on its
own thread. Threads cannot be cancelled, so a warmup that loses its run or leadership
kills its sandbox at the commit fence instead of committing it.
"""

from __future__ import annotations

import inspect
import logging
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Callable, List, Optional, Set, Tuple

from opensandbox._pool_core import (
    CREATE_ADMISSION_HEADROOM,
    RECONCILE_INTERVAL_SECONDS,
    ReconcileState,
    now_utc,
    plan_replenish,
)
from opensandbox.config.connection_sync import ConnectionConfigSync
from opensandbox.exceptions import (
    PoolAcquireFailedException,
    PoolDestroyedException,
    PoolEmptyException,
    PoolNotRunningException,
    PoolStateStoreUnavailableException,
    SandboxApiException,
    SandboxReadyTimeoutException,
)
from opensandbox.pool_types import (
    AcquirePolicy,
    IdleEntry,
    PoolConfig,
    PoolCreationSpec,
    PoolDestroyState,
    PooledSandboxCreateContext,
    PooledSandboxCreateReason,
    PooledSandboxCreator,
    PoolLifecycleState,
    PoolSnapshot,
    PoolState,
    PoolStateStore,
    effective_max_idle_attempts,
    policy_falls_through_to_direct_create,
    reap_expired_idle_with_min_ttl,
    try_take_idle_with_min_ttl,
)
from opensandbox.sync.manager import SandboxManagerSync
from opensandbox.sync.sandbox import SandboxSync

logger = logging.getLogger(__name__)

_RELEASE_ALL_IDLE_CONCURRENCY = 50
_THREAD_JOIN_TIMEOUT_SECONDS = 5.0


def _is_auth_error(exc: BaseException) -> bool:
    return isinstance(exc, SandboxApiException) and exc.status_code in (401, 403)


class SandboxPoolSync:
    """Client-side blocking sandbox pool (same parameters and defaults as the official 1.1.1)."""

    def __init__(
        self,
        *,
        pool_name: str,
        max_idle: int,
        state_store: PoolStateStore,
        connection_config: ConnectionConfigSync,
        creation_spec: PoolCreationSpec,
        owner_id: Optional[str] = None,
        warmup_create_qps: int = 10,
        warmup_concurrency: int = 128,
        primary_lock_ttl: timedelta = timedelta(seconds=60),
        degraded_threshold: int = 3,
        acquire_ready_timeout: timedelta = timedelta(seconds=30),
        acquire_health_check_polling_interval: timedelta = timedelta(milliseconds=200),
        acquire_health_check: Optional[Callable[[SandboxSync], bool]] = None,
        acquire_skip_health_check: bool = False,
        warmup_ready_timeout: timedelta = timedelta(seconds=30),
        warmup_health_check_initial_delay: timedelta = timedelta(0),
        warmup_health_check_polling_interval: timedelta = timedelta(milliseconds=500),
        warmup_health_check: Optional[Callable[[SandboxSync], bool]] = None,
        warmup_sandbox_preparer: Optional[Callable[[SandboxSync], None]] = None,
        warmup_post_prepare_health_check: Optional[Callable[[SandboxSync], bool]] = None,
        warmup_post_prepare_health_check_timeout: timedelta = timedelta(seconds=30),
        warmup_skip_health_check: bool = False,
        idle_timeout: timedelta = timedelta(hours=24),
        drain_timeout: timedelta = timedelta(seconds=30),
        acquire_min_remaining_ttl: Optional[timedelta] = None,
        max_acquire_retries: int = 3,
        sandbox_manager_factory: Callable[[ConnectionConfigSync], SandboxManagerSync] = SandboxManagerSync.create,
        sandbox_factory: type[SandboxSync] = SandboxSync,
        sandbox_creator: Optional[PooledSandboxCreator] = None,
    ) -> None:
        if inspect.iscoroutinefunction(getattr(state_store, "try_take_idle", None)):
            raise TypeError(
                f"SandboxPoolSync needs a blocking state store, got the async {type(state_store).__name__} "
                "(use InMemoryPoolStateStore or RedisPoolStateStore)"
            )
        self._config = PoolConfig(
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
        self._lifecycle_lock = threading.RLock()
        self._reconcile_lock = threading.Lock()
        # Guards the run/leadership fields and the thread sets below.
        self._state_lock = threading.RLock()
        self._in_flight = 0
        self._in_flight_changed = threading.Condition()
        # ``_scheduler_stop`` ends the reconcile loop (graceful shutdown sets it first, so
        # in-flight warmups may still finish); ``_stop_event`` ends everything.
        self._scheduler_stop = threading.Event()
        self._stop_event = threading.Event()
        self._scheduler: Optional[threading.Thread] = None
        self._heartbeat: Optional[threading.Thread] = None
        self._manager: Optional[SandboxManagerSync] = None
        self._warmups: Set[threading.Thread] = set()
        self._cleanups: Set[threading.Thread] = set()
        self._run_generation = 0
        self._leader_epoch = 0
        self._primary_owned = False
        self._accept_warmup_commits = False
        self._post_create_gate = threading.BoundedSemaphore(warmup_concurrency)
        self._create_gate = threading.BoundedSemaphore(self._create_admission())

    def _create_admission(self) -> int:
        return max(1, math.ceil(self._config.warmup_create_qps * CREATE_ADMISSION_HEADROOM))

    # ----- lifecycle -----

    def start(self) -> None:
        """Starts reconciling (idempotent). Raises ``PoolDestroyedException`` for a destroyed name."""
        with self._lifecycle_lock:
            if self._lifecycle_state in (PoolLifecycleState.RUNNING, PoolLifecycleState.STARTING):
                return
            self._lifecycle_state = PoolLifecycleState.STARTING
            try:
                self._ensure_namespace_active()
                if self._config.primary_lock_ttl <= self._config.warmup_ready_timeout:
                    logger.warning(
                        "pool %s: primary_lock_ttl %s <= warmup_ready_timeout %s; the lock may lapse during a warmup",
                        self._config.pool_name,
                        self._config.primary_lock_ttl,
                        self._config.warmup_ready_timeout,
                    )
                self._manager = self._manager_factory(self._config.connection_config)
                self._store.set_idle_entry_ttl(self._config.pool_name, self._config.idle_timeout)
                self._store.set_max_idle(self._config.pool_name, self._current_max_idle)
                with self._state_lock:
                    self._run_generation += 1
                    self._primary_owned = False
                    self._accept_warmup_commits = True
                self._post_create_gate = threading.BoundedSemaphore(self._config.warmup_concurrency)
                self._create_gate = threading.BoundedSemaphore(self._create_admission())
                self._scheduler_stop = threading.Event()
                self._stop_event = threading.Event()
                self._lifecycle_state = PoolLifecycleState.RUNNING
                name = self._config.pool_name
                self._scheduler = threading.Thread(
                    target=self._run_scheduler,
                    args=(self._scheduler_stop,),
                    name=f"sandbox-pool-reconcile-{name}",
                    daemon=True,
                )
                self._heartbeat = threading.Thread(
                    target=self._run_heartbeat,
                    args=(self._stop_event, self._run_generation),
                    name=f"sandbox-pool-heartbeat-{name}",
                    daemon=True,
                )
                self._scheduler.start()
                self._heartbeat.start()
            except BaseException:
                self._stop_reconcile(wait_for_background=True)
                self._close_manager()
                self._lifecycle_state = PoolLifecycleState.STOPPED
                raise

    def shutdown(self, graceful: bool = True) -> None:
        """Stops reconciling and releases the primary lock. ``graceful`` waits up to
        ``drain_timeout`` for in-flight acquires and warmups; idle sandboxes stay in the
        store for other instances (``release_all_idle`` kills them)."""
        with self._lifecycle_lock:
            if self._lifecycle_state in (PoolLifecycleState.NOT_STARTED, PoolLifecycleState.STOPPED):
                self._lifecycle_state = PoolLifecycleState.STOPPED
                return
            run_generation = self._run_generation
            if not graceful:
                self._stop_now()
                return
            self._lifecycle_state = PoolLifecycleState.DRAINING
            self._scheduler_stop.set()
        if not self._await_in_flight_drain(self._config.drain_timeout):
            logger.warning(
                "pool %s: graceful shutdown gave up waiting for %d in-flight operation(s) after %s",
                self._config.pool_name,
                self._in_flight,
                self._config.drain_timeout,
            )
        with self._lifecycle_lock:
            if self._run_generation != run_generation:
                return  # a start() during the drain owns the pool now
            self._stop_now()

    def _stop_now(self) -> None:
        with self._state_lock:
            self._accept_warmup_commits = False
        self._stop_reconcile(wait_for_background=False)
        self._lifecycle_state = PoolLifecycleState.STOPPED
        self._close_manager()

    def __enter__(self) -> SandboxPoolSync:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown(graceful=True)

    # ----- acquire -----

    def acquire(
        self, sandbox_timeout: Optional[timedelta] = None, policy: AcquirePolicy = AcquirePolicy.DIRECT_CREATE
    ) -> SandboxSync:
        """A ready sandbox: an idle one from the pool, else (by ``policy``) a new one.
        ``sandbox_timeout`` renews it for the caller; the caller owns it (kill it when done)."""
        with self._lifecycle_lock:
            if self._lifecycle_state != PoolLifecycleState.RUNNING:
                state = self._lifecycle_state
                self._raise_if_destroyed()
                raise PoolNotRunningException(f"Cannot acquire when pool state is {state.value}")
            generation = self._run_generation
            self._begin_operation()
        try:
            return self._acquire(sandbox_timeout, policy, generation)
        finally:
            self._end_operation()

    def _acquire(self, sandbox_timeout: Optional[timedelta], policy: AcquirePolicy, generation: int) -> SandboxSync:
        self._ensure_run_active(generation)
        self._ensure_namespace_active_for(policy)
        pool_name = self._config.pool_name
        max_attempts = effective_max_idle_attempts(policy, self._config.max_acquire_retries)
        condemned: List[str] = []
        last_id: Optional[str] = None
        last_failure: Optional[BaseException] = None
        tried = 0
        drained = False
        try:
            while tried < max_attempts:
                self._ensure_run_active(generation)
                try:
                    taken = try_take_idle_with_min_ttl(self._store, pool_name, self._config.acquire_min_remaining_ttl)
                except PoolStateStoreUnavailableException:
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
                    sandbox = self._connect_idle(taken.sandbox_id)
                except Exception as exc:
                    condemned.append(taken.sandbox_id)
                    if _is_auth_error(exc):
                        raise
                    logger.info("pool %s: idle sandbox %s unusable: %s", pool_name, taken.sandbox_id, exc)
                    last_failure = exc
                    self._store.remove_idle(pool_name, taken.sandbox_id)
                    self._ensure_run_active(generation)
                    self._ensure_namespace_active()
                    continue
                return self._finish_acquire(sandbox, sandbox_timeout, generation)
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
        self._ensure_run_active(generation)
        try:
            sandbox = self._create(PooledSandboxCreateReason.DIRECT_CREATE, policy)
        except PoolDestroyedException:
            raise
        except Exception as exc:
            try:
                self._ensure_run_active(generation)
            except PoolNotRunningException as retired:
                raise retired from exc
            raise
        return self._finish_acquire(sandbox, sandbox_timeout, generation, policy)

    def _connect_idle(self, sandbox_id: str) -> SandboxSync:
        return self._sandbox_factory.connect(
            sandbox_id,
            connection_config=self._config.connection_config,
            health_check=self._config.acquire_health_check,
            connect_timeout=self._config.acquire_ready_timeout,
            health_check_polling_interval=self._config.acquire_health_check_polling_interval,
            skip_health_check=self._config.acquire_skip_health_check,
        )

    def _finish_acquire(
        self,
        sandbox: SandboxSync,
        sandbox_timeout: Optional[timedelta],
        generation: int,
        policy: Optional[AcquirePolicy] = None,
    ) -> SandboxSync:
        try:
            if sandbox_timeout is not None:
                sandbox.renew(sandbox_timeout)
            self._ensure_namespace_active_after_create(sandbox, policy)
            self._ensure_run_active(generation)
        except BaseException:
            self._kill_and_close(sandbox)
            raise
        return sandbox

    # ----- other public operations -----

    def resize(self, max_idle: int) -> None:
        """Sets the shared idle target (every instance on the store follows it)."""
        if max_idle < 0:
            raise ValueError("max_idle must be >= 0")
        self._ensure_namespace_active()
        self._store.set_max_idle(self._config.pool_name, max_idle)
        self._current_max_idle = max_idle

    def release_all_idle(self) -> int:
        """Takes every idle sandbox out of the store and kills it, one by one; returns the count."""
        return self._release_idle(1)

    def release_all_idle_parallel(self, max_workers: int = _RELEASE_ALL_IDLE_CONCURRENCY) -> int:
        """:meth:`release_all_idle` with up to ``max_workers`` kills at once."""
        if max_workers <= 0:
            raise ValueError("max_workers must be positive")
        return self._release_idle(max_workers)

    def _release_idle(self, workers: int) -> int:
        pool_name = self._config.pool_name
        ids: List[str] = []
        drain_error: Optional[Exception] = None
        while True:
            try:
                sandbox_id = self._store.try_take_idle(pool_name)
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
                    manager = self._manager_factory(self._config.connection_config)
                except Exception:
                    # The ids already left the store: name them so they can be killed by hand.
                    logger.error("pool %s: no manager to kill released idle sandboxes %s", pool_name, ids)
                    raise
            try:
                with ThreadPoolExecutor(max_workers=min(workers, len(ids))) as pool:
                    list(pool.map(lambda i: self._kill_best_effort(i, manager), ids))
            finally:
                if temporary:
                    manager.close()
        if drain_error is not None:
            raise drain_error
        return len(ids)

    def snapshot(self) -> PoolSnapshot:
        lifecycle = self._lifecycle_state
        if lifecycle in (PoolLifecycleState.NOT_STARTED, PoolLifecycleState.STOPPED):
            state = PoolState.STOPPED
        elif lifecycle == PoolLifecycleState.DRAINING:
            state = PoolState.DRAINING
        else:
            state = self._health.state
        counters = self._store.snapshot_counters(self._config.pool_name)
        return PoolSnapshot(
            state=state,
            lifecycle_state=lifecycle,
            idle_count=counters.idle_count,
            max_idle=self._resolve_max_idle(),
            failure_count=self._health.failure_count,
            backoff_active=self._health.is_backoff_active(),
            last_error=self._health.last_error,
            in_flight_operations=self._in_flight,
        )

    def snapshot_idle_entries(self) -> List[IdleEntry]:
        return self._store.snapshot_idle_entries(self._config.pool_name)

    # ----- reconcile -----

    def _run_scheduler(self, stop: threading.Event) -> None:
        if self._config.max_idle == 0 and stop.wait(RECONCILE_INTERVAL_SECONDS):
            return
        while not stop.is_set():
            self._reconcile_tick(stop)
            if stop.wait(RECONCILE_INTERVAL_SECONDS):
                return

    def _reconcile_tick(self, stop: threading.Event) -> None:
        with self._reconcile_lock:
            if stop.is_set() or self._lifecycle_state != PoolLifecycleState.RUNNING:
                return
            self._begin_operation()
            try:
                pool_name = self._config.pool_name
                if self._store.get_destroy_state(pool_name) != PoolDestroyState.ACTIVE:
                    self._stop_after_destroyed()
                    return
                if not self._store.try_acquire_primary_lock(pool_name, self._owner_id, self._config.primary_lock_ttl):
                    self._mark_primary_lost()
                    return
                self._mark_primary_acquired()
                self._replenish_once()
            except Exception as exc:
                self._mark_primary_lost()
                logger.error("pool %s: reconcile tick failed", self._config.pool_name, exc_info=exc)
            finally:
                self._end_operation()

    def _replenish_once(self) -> None:
        pool_name, ttl = self._config.pool_name, self._config.primary_lock_ttl
        for sandbox_id in reap_expired_idle_with_min_ttl(
            self._store, pool_name, now_utc(), self._config.acquire_min_remaining_ttl
        ):
            self._kill_best_effort(sandbox_id)
        counters = self._store.snapshot_counters(pool_name)
        with self._state_lock:
            warming = len(self._warmups)
        to_remove, to_create = plan_replenish(
            counters.idle_count,
            self._resolve_max_idle(),
            warming,
            self._config.warmup_concurrency,
            self._config.warmup_create_qps,
        )
        for _ in range(to_remove):
            if not self._store.renew_primary_lock(pool_name, self._owner_id, ttl):
                return
            surplus = self._store.try_take_idle(pool_name)
            if surplus is None:
                break
            self._kill_best_effort(surplus)
        if not self._store.renew_primary_lock(pool_name, self._owner_id, ttl):
            self._mark_primary_lost()
            return
        with self._state_lock:
            generation, epoch = self._run_generation, self._leader_epoch
            for _ in range(to_create):
                thread = threading.Thread(
                    target=self._run_warmup,
                    args=(generation, epoch),
                    name=f"sandbox-pool-warmup-{pool_name}",
                    daemon=True,
                )
                self._warmups.add(thread)
                self._begin_operation()  # ended by the warmup thread
                thread.start()

    def _run_heartbeat(self, stop: threading.Event, generation: int) -> None:
        interval = max(0.001, min(1.0, self._config.primary_lock_ttl.total_seconds() / 3))
        while generation == self._run_generation and not stop.wait(interval):
            if not self._primary_owned:
                continue
            try:
                if not self._store.renew_primary_lock(
                    self._config.pool_name, self._owner_id, self._config.primary_lock_ttl
                ):
                    self._mark_primary_lost()
            except Exception as exc:
                logger.warning("pool %s: primary lock heartbeat failed: %s", self._config.pool_name, exc)

    def _mark_primary_acquired(self) -> None:
        with self._state_lock:
            if not self._primary_owned:
                self._primary_owned = True
                self._leader_epoch += 1

    def _mark_primary_lost(self) -> None:
        with self._state_lock:
            if self._primary_owned:
                self._primary_owned = False
                self._leader_epoch += 1

    # ----- warmup -----

    def _run_warmup(self, generation: int, leader_epoch: int) -> None:
        sandbox: Optional[SandboxSync] = None
        committed = False
        stage = "create"
        try:
            self._ensure_namespace_active()
            with self._create_gate:
                if not self._can_commit_locally(generation, leader_epoch):
                    return  # retired while waiting for admission: do not create at all
                sandbox = self._create(PooledSandboxCreateReason.WARMUP)
            deadline = time.monotonic() + self._config.warmup_ready_timeout.total_seconds()
            if not self._config.warmup_skip_health_check:
                stage = "readiness"
                delay = self._config.warmup_health_check_initial_delay.total_seconds()
                if delay > 0:
                    time.sleep(min(delay, self._config.warmup_ready_timeout.total_seconds()))
                self._wait_until_healthy(sandbox, self._config.warmup_health_check, deadline, "warmup readiness")
            if self._config.warmup_sandbox_preparer is not None:
                stage = "prepare"
                with self._post_create_gate:
                    self._config.warmup_sandbox_preparer(sandbox)
            if self._config.warmup_post_prepare_health_check is not None:
                stage = "post-prepare readiness"
                timeout = self._config.warmup_post_prepare_health_check_timeout.total_seconds()
                self._wait_until_healthy(
                    sandbox, self._config.warmup_post_prepare_health_check, time.monotonic() + timeout, stage
                )
            with self._post_create_gate:
                stage = "renew"
                sandbox.renew(self._config.idle_timeout)
                self._ensure_namespace_active()
                stage = "commit"
                if not self._can_commit_warmup(generation, leader_epoch):
                    return
                self._store.put_idle(self._config.pool_name, sandbox.id)
                if not self._can_commit_locally(generation, leader_epoch):
                    self._store.remove_idle(self._config.pool_name, sandbox.id)
                    return
            committed = True
            self._health.record_success()
        except Exception as exc:
            self._health.record_failure(f"warmup {stage} failed: {exc}")
            logger.warning("pool %s: warmup failed at %s: %s", self._config.pool_name, stage, exc)
        finally:
            try:
                if sandbox is not None:
                    if committed:
                        sandbox.close()
                    else:
                        self._kill_and_close(sandbox)
            finally:
                with self._state_lock:
                    self._warmups.discard(threading.current_thread())
                self._end_operation()

    def _wait_until_healthy(
        self,
        sandbox: SandboxSync,
        health_check: Optional[Callable[[SandboxSync], bool]],
        deadline: float,
        stage: str,
    ) -> None:
        last_error: Optional[Exception] = None
        while True:
            try:
                with self._post_create_gate:
                    healthy = health_check(sandbox) if health_check is not None else sandbox.is_healthy()
                if healthy:
                    return
                last_error = None
            except Exception as exc:
                last_error = exc
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxReadyTimeoutException(f"Pool {stage} timed out: sandbox_id={sandbox.id}", last_error)
            if self._stop_event.wait(min(remaining, self._config.warmup_health_check_polling_interval.total_seconds())):
                raise PoolNotRunningException(f"Pool stopped during {stage}: sandbox_id={sandbox.id}")

    def _can_commit_warmup(self, generation: int, leader_epoch: int) -> bool:
        if not self._can_commit_locally(generation, leader_epoch):
            return False
        if not self._store.renew_primary_lock(self._config.pool_name, self._owner_id, self._config.primary_lock_ttl):
            self._mark_primary_lost()
            return False
        return self._can_commit_locally(generation, leader_epoch)

    def _can_commit_locally(self, generation: int, leader_epoch: int) -> bool:
        with self._state_lock:
            return (
                generation == self._run_generation
                and leader_epoch == self._leader_epoch
                and self._primary_owned
                and self._accept_warmup_commits
                and self._lifecycle_state in (PoolLifecycleState.RUNNING, PoolLifecycleState.DRAINING)
            )

    # ----- creation -----

    def _create(
        self, reason: PooledSandboxCreateReason, policy: AcquirePolicy = AcquirePolicy.DIRECT_CREATE
    ) -> SandboxSync:
        config = self._config
        warmup = reason == PooledSandboxCreateReason.WARMUP
        if not warmup:
            self._ensure_namespace_active_for(policy)
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
            return config.sandbox_creator(context)
        spec = config.creation_spec
        return self._sandbox_factory.create(
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

    def _ensure_namespace_active(self) -> None:
        state = self._store.get_destroy_state(self._config.pool_name)
        if state != PoolDestroyState.ACTIVE:
            raise PoolDestroyedException(f"Pool namespace is {state.value}: pool_name={self._config.pool_name}")

    def _ensure_namespace_active_for(self, policy: AcquirePolicy) -> None:
        try:
            self._ensure_namespace_active()
        except PoolStateStoreUnavailableException:
            if not policy_falls_through_to_direct_create(policy):
                raise
            logger.warning("pool %s: state store unavailable, assuming the pool is active", self._config.pool_name)

    def _ensure_namespace_active_after_create(self, sandbox: SandboxSync, policy: Optional[AcquirePolicy]) -> None:
        try:
            self._ensure_namespace_active()
        except PoolStateStoreUnavailableException:
            if policy is None or not policy_falls_through_to_direct_create(policy):
                raise
            logger.warning("pool %s: state store unavailable, keeping sandbox %s", self._config.pool_name, sandbox.id)

    def _raise_if_destroyed(self) -> None:
        try:
            self._ensure_namespace_active()
        except PoolDestroyedException:
            raise
        except Exception:
            return

    def _ensure_run_active(self, generation: int) -> None:
        if generation == self._run_generation and self._lifecycle_state == PoolLifecycleState.RUNNING:
            return
        state = self._lifecycle_state
        self._raise_if_destroyed()
        raise PoolNotRunningException(
            f"Cannot acquire from a retired pool run: pool_name={self._config.pool_name} state={state.value}"
        )

    def _stop_after_destroyed(self) -> None:
        # Runs on the scheduler thread: it must not join itself.
        with self._lifecycle_lock:
            if self._lifecycle_state == PoolLifecycleState.STOPPED:
                return
            with self._state_lock:
                self._accept_warmup_commits = False
            self._stop_reconcile(wait_for_background=False)
            self._lifecycle_state = PoolLifecycleState.STOPPED
            self._close_manager()

    # ----- helpers -----

    def _resolve_max_idle(self) -> int:
        shared = self._store.get_max_idle(self._config.pool_name)
        return self._current_max_idle if shared is None else shared

    def _kill_best_effort(self, sandbox_id: str, manager: Optional[SandboxManagerSync] = None) -> bool:
        manager = manager or self._manager
        if manager is None:
            return False
        try:
            manager.kill_sandbox(sandbox_id)
            return True
        except Exception as exc:
            logger.warning("pool %s: killing sandbox %s failed: %s", self._config.pool_name, sandbox_id, exc)
            return False

    def _schedule_kills(self, sandbox_ids: Tuple[str, ...]) -> None:
        """Kills on a background thread so ``acquire`` does not wait for N DELETEs."""
        if not sandbox_ids:
            return

        def kill_all() -> None:
            try:
                for sandbox_id in sandbox_ids:
                    self._kill_best_effort(sandbox_id)
            finally:
                with self._state_lock:
                    self._cleanups.discard(threading.current_thread())

        thread = threading.Thread(target=kill_all, name=f"sandbox-pool-cleanup-{self._config.pool_name}", daemon=True)
        with self._state_lock:
            self._cleanups.add(thread)
        thread.start()

    def _kill_and_close(self, sandbox: SandboxSync) -> None:
        try:
            sandbox.kill()
        except Exception as exc:
            logger.warning("pool %s: killing sandbox %s failed: %s", self._config.pool_name, sandbox.id, exc)
        sandbox.close()

    def _begin_operation(self) -> None:
        with self._in_flight_changed:
            self._in_flight += 1

    def _end_operation(self) -> None:
        with self._in_flight_changed:
            self._in_flight = max(0, self._in_flight - 1)
            if self._in_flight == 0:
                self._in_flight_changed.notify_all()

    def _await_in_flight_drain(self, timeout: timedelta) -> bool:
        deadline = time.monotonic() + timeout.total_seconds()
        with self._in_flight_changed:
            while self._in_flight > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._in_flight_changed.wait(remaining)
            return True

    def _stop_reconcile(self, *, wait_for_background: bool) -> None:
        self._scheduler_stop.set()
        self._stop_event.set()
        current = threading.current_thread()
        for thread in (self._scheduler, self._heartbeat):
            if thread is not None and thread is not current:
                thread.join(_THREAD_JOIN_TIMEOUT_SECONDS)
        self._scheduler = self._heartbeat = None
        with self._state_lock:
            background = [t for t in (*self._warmups, *self._cleanups) if t is not current]
            if not wait_for_background:
                # Threads cannot be cancelled: retire their run so they kill, not commit.
                self._accept_warmup_commits = False
        for thread in background:
            thread.join(_THREAD_JOIN_TIMEOUT_SECONDS if not wait_for_background else None)
        try:
            self._store.release_primary_lock(self._config.pool_name, self._owner_id)
        except Exception as exc:
            logger.warning("pool %s: releasing the primary lock failed: %s", self._config.pool_name, exc)
        self._mark_primary_lost()

    def _close_manager(self) -> None:
        if self._manager is not None:
            self._manager.close()
            self._manager = None


SandboxPool = SandboxPoolSync

__all__ = ["SandboxPool", "SandboxPoolSync"]
