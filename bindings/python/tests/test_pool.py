"""Client-side sandbox pools (in-memory state stores) against the real reference server:
the reconcile loop, acquire and its policies, stale idle sandboxes, destroy, the sync pool.
Short TTLs and small pools keep this file well under a minute."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta

import pytest

from opensandbox import (
    AcquirePolicy,
    InMemoryAsyncPoolStateStore,
    InMemoryPoolStateStore,
    PoolCreationSpec,
    PoolDestroyState,
    PooledSandboxCreateContext,
    PooledSandboxCreateReason,
    Sandbox,
    SandboxManager,
    SandboxManagerSync,
    SandboxPoolAsync,
    SandboxPoolManagerAsync,
    SandboxPoolSync,
)
from opensandbox.config import ConnectionConfig, ConnectionConfigSync
from opensandbox.exceptions import (
    PoolAcquireFailedException,
    PoolDestroyedException,
    PoolEmptyException,
    PoolNotRunningException,
    PoolStateStoreUnavailableException,
    SandboxApiException,
    SandboxError,
)
from opensandbox.pool import PoolLifecycleState, PoolState
from opensandbox.models.sandboxes import SandboxFilter


def spec(tag: str) -> PoolCreationSpec:
    return PoolCreationSpec(image="python:3.11", metadata={"pool-test": tag})


def async_pool(store, name: str, max_idle: int, **kw) -> SandboxPoolAsync:
    kw.setdefault("idle_timeout", timedelta(minutes=5))
    return SandboxPoolAsync(
        pool_name=name,
        max_idle=max_idle,
        state_store=store,
        connection_config=ConnectionConfig(),
        creation_spec=spec(name),
        warmup_ready_timeout=timedelta(seconds=20),
        warmup_health_check_polling_interval=timedelta(milliseconds=100),
        primary_lock_ttl=timedelta(seconds=30),
        drain_timeout=timedelta(seconds=5),
        **kw,
    )


async def wait_for(predicate, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


async def is_gone(sandbox_id: str) -> bool:
    manager = await SandboxManager.create()
    try:
        info = await manager.get_sandbox_info(sandbox_id)
    except SandboxApiException as e:
        return e.status_code == 404
    return info.status.state in ("Terminated", "Failed", "Stopping")


async def live_pool_sandboxes(tag: str) -> list:
    manager = await SandboxManager.create()
    page = await manager.list_sandbox_infos(SandboxFilter(metadata={"pool-test": tag}, states=["Running"]))
    return [i.id for i in page.sandbox_infos]


async def test_pool_warms_to_max_idle_hands_out_idle_sandboxes_and_refills(server):
    name = f"warm-{uuid.uuid4().hex[:8]}"
    store = InMemoryAsyncPoolStateStore()
    pool = async_pool(store, name, 2)
    async with pool:
        entries = await wait_for(lambda: _entries_if(pool, 2), what="two idle sandboxes")
        idle_ids = {e.sandbox_id for e in entries}
        snap = await pool.snapshot()
        assert snap.state == PoolState.HEALTHY and snap.lifecycle_state == PoolLifecycleState.RUNNING
        assert snap.max_idle == 2 and snap.failure_count == 0

        sandbox = await pool.acquire(sandbox_timeout=timedelta(minutes=2), policy=AcquirePolicy.FAIL_FAST)
        try:
            assert sandbox.id in idle_ids  # an idle one, not a fresh create
            result = await sandbox.commands.run("echo pooled")
            assert result.exit_code == 0
            # The handed-out sandbox left the store; the reconciler replaces it.
            assert sandbox.id not in {e.sandbox_id for e in await pool.snapshot_idle_entries()}
            refilled = await wait_for(lambda: _entries_if(pool, 2), what="the refill")
            assert sandbox.id not in {e.sandbox_id for e in refilled}
        finally:
            await sandbox.kill()
        # Never more sandboxes than max_idle + the one handed out.
        assert len(await live_pool_sandboxes(name)) == 2
    assert (await pool.snapshot()).state == PoolState.STOPPED
    with pytest.raises(PoolNotRunningException) as e:
        await pool.acquire()
    assert e.value.error.code == SandboxError.POOL_NOT_RUNNING
    # Idle sandboxes outlive shutdown (other instances may use them) until released.
    remaining = {e.sandbox_id for e in await pool.snapshot_idle_entries()}
    assert len(remaining) == 2
    assert await pool.release_all_idle() == 2
    for sandbox_id in remaining:
        assert await is_gone(sandbox_id)


async def _entries_if(pool, count):
    entries = await pool.snapshot_idle_entries()
    return entries if len(entries) >= count else None


async def test_empty_pool_policies(server):
    name = f"empty-{uuid.uuid4().hex[:8]}"
    async with async_pool(InMemoryAsyncPoolStateStore(), name, 0) as pool:
        for policy in (AcquirePolicy.FAIL_FAST, AcquirePolicy.RETRY_NEXT_IDLE):
            with pytest.raises(PoolEmptyException) as e:
                await pool.acquire(policy=policy)
            assert e.value.error.code == SandboxError.POOL_EMPTY
            assert "idle buffer empty" in str(e.value)
        for policy in (AcquirePolicy.DIRECT_CREATE, AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE):
            sandbox = await pool.acquire(policy=policy)
            try:
                assert (await sandbox.commands.run("true")).exit_code == 0
            finally:
                await sandbox.kill()


async def test_stale_idle_candidates_are_dropped_then_policy_decides(server):
    name = f"stale-{uuid.uuid4().hex[:8]}"
    store = InMemoryAsyncPoolStateStore()
    dead = []
    for _ in range(3):
        sb = await Sandbox.create("python:3.11")
        await sb.kill()
        dead.append(sb.id)
    async with async_pool(store, name, 0, acquire_ready_timeout=timedelta(seconds=3), max_acquire_retries=2) as pool:
        # FAIL_FAST: one dead candidate, then PoolAcquireFailedException; the id is gone.
        await store.put_idle(name, dead[0])
        with pytest.raises(PoolAcquireFailedException) as e:
            await pool.acquire(policy=AcquirePolicy.FAIL_FAST)
        assert e.value.error.code == SandboxError.POOL_ACQUIRE_FAILED
        assert (await store.snapshot_counters(name)).idle_count == 0

        # RETRY_NEXT_IDLE_THEN_CREATE: skips both dead ones (budget 2), then creates.
        await store.put_idle(name, dead[1])
        await store.put_idle(name, dead[2])
        sandbox = await pool.acquire(policy=AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE)
        try:
            assert sandbox.id not in dead
            assert (await store.snapshot_counters(name)).idle_count == 0
        finally:
            await sandbox.kill()


async def test_near_expiry_idle_sandboxes_are_reaped_killed_and_replaced(server):
    # The server's minimum timeout is 60 s; with 59 s of required remaining TTL an idle
    # sandbox turns near-expiry about 3 s after it was warmed: the reconciler reaps it,
    # kills it and warms a fresh one.
    name = f"reap-{uuid.uuid4().hex[:8]}"
    pool = async_pool(
        InMemoryAsyncPoolStateStore(),
        name,
        1,
        idle_timeout=timedelta(seconds=62),
        acquire_min_remaining_ttl=timedelta(seconds=59),
    )
    async with pool:
        first = (await wait_for(lambda: _entries_if(pool, 1), what="the first idle sandbox"))[0].sandbox_id

        async def replaced():
            ids = [e.sandbox_id for e in await pool.snapshot_idle_entries()]
            return ids if ids and first not in ids else None

        await wait_for(replaced, timeout=20, what="the replacement")
        assert await wait_for(lambda: is_gone(first), timeout=10, what="the reaped sandbox's kill")
    await pool.release_all_idle()


async def test_failing_warmups_degrade_the_pool(server):
    # The server refuses timeouts under 60 s: every warmup fails at create.
    name = f"degraded-{uuid.uuid4().hex[:8]}"
    pool = async_pool(InMemoryAsyncPoolStateStore(), name, 1, idle_timeout=timedelta(seconds=10), degraded_threshold=2)
    async with pool:

        async def degraded():
            snap = await pool.snapshot()
            return snap if snap.state == PoolState.DEGRADED else None

        snap = await wait_for(degraded, timeout=10, what="DEGRADED")
        assert snap.failure_count >= 2 and snap.idle_count == 0
        assert "warmup create failed" in snap.last_error and "60 seconds" in snap.last_error
        # Nothing idle, and FAIL_FAST does not create.
        with pytest.raises(PoolEmptyException):
            await pool.acquire(policy=AcquirePolicy.FAIL_FAST)
    assert await live_pool_sandboxes(name) == []


async def test_sandbox_creator_and_warmup_preparer_are_used(server):
    name = f"hooks-{uuid.uuid4().hex[:8]}"
    contexts = []

    async def creator(context: PooledSandboxCreateContext) -> Sandbox:
        contexts.append(context)
        return await Sandbox.create(
            "python:3.11",
            timeout=context.idle_timeout,
            metadata={"pool-test": name, "reason": context.reason.value},
            connection_config=context.connection_config,
            skip_health_check=context.skip_health_check,
        )

    async def prepare(sandbox: Sandbox) -> None:
        await sandbox.files.write_file("/tmp/prepared", "yes")

    pool = async_pool(InMemoryAsyncPoolStateStore(), name, 1, sandbox_creator=creator, warmup_sandbox_preparer=prepare)
    async with pool:
        await wait_for(lambda: _entries_if(pool, 1), what="a prepared idle sandbox")
        sandbox = await pool.acquire(policy=AcquirePolicy.FAIL_FAST)
        try:
            assert await sandbox.files.read_file("/tmp/prepared") == "yes"
        finally:
            await sandbox.kill()
        warm = contexts[0]
        assert warm.reason == PooledSandboxCreateReason.WARMUP and warm.pool_name == name
        assert warm.idle_timeout == timedelta(minutes=5) and warm.skip_health_check is True
    await pool.release_all_idle()
    # An empty pool: DIRECT_CREATE asks the creator too, with the acquire settings.
    async with async_pool(InMemoryAsyncPoolStateStore(), f"{name}-d", 0, sandbox_creator=creator) as empty:
        direct = await empty.acquire(policy=AcquirePolicy.DIRECT_CREATE)
        await direct.kill()
    assert contexts[-1].reason == PooledSandboxCreateReason.DIRECT_CREATE
    assert contexts[-1].ready_timeout == timedelta(seconds=30) and contexts[-1].skip_health_check is False


class FlakyStore(InMemoryAsyncPoolStateStore):
    """An in-memory store whose idle and destroy-state reads fail while ``down``."""

    down = False

    def _check(self):
        if self.down:
            raise PoolStateStoreUnavailableException("store down (test)")

    async def get_destroy_state(self, pool_name):
        self._check()
        return await super().get_destroy_state(pool_name)

    async def try_take_idle_min_ttl(self, pool_name, min_remaining_ttl):
        self._check()
        return await super().try_take_idle_min_ttl(pool_name, min_remaining_ttl)


async def test_store_outage_degrades_creating_policies_to_direct_create(server):
    store = FlakyStore()
    async with async_pool(store, f"outage-{uuid.uuid4().hex[:8]}", 0) as pool:
        store.down = True
        sandbox = await pool.acquire(policy=AcquirePolicy.DIRECT_CREATE)
        try:
            assert (await sandbox.commands.run("true")).exit_code == 0
        finally:
            await sandbox.kill()
        for policy in (AcquirePolicy.FAIL_FAST, AcquirePolicy.RETRY_NEXT_IDLE):
            with pytest.raises(PoolStateStoreUnavailableException) as e:
                await pool.acquire(policy=policy)
            assert e.value.error.code == SandboxError.POOL_STATE_STORE_UNAVAILABLE
        store.down = False


async def test_destroy_fences_every_instance_and_kills_idle(server):
    name = f"destroy-{uuid.uuid4().hex[:8]}"
    store = InMemoryAsyncPoolStateStore()
    pool = async_pool(store, name, 1)
    await pool.start()
    try:
        idle_id = (await wait_for(lambda: _entries_if(pool, 1), what="an idle sandbox"))[0].sandbox_id
        result = await SandboxPoolManagerAsync(state_store=store).destroy(name)
        assert result.state == PoolDestroyState.DESTROYED
        assert (result.drained_idle_count, result.killed_idle_count, result.persistent_state_cleared) == (1, 1, True)
        assert await is_gone(idle_id)
        with pytest.raises(PoolDestroyedException) as e:
            await pool.acquire()
        assert e.value.error.code == SandboxError.POOL_DESTROYED

        async def stopped():
            return (await pool.snapshot()).lifecycle_state == PoolLifecycleState.STOPPED

        await wait_for(stopped, timeout=5, what="the running instance to stop")
        with pytest.raises(PoolDestroyedException):
            await async_pool(store, name, 1).start()
        again = await SandboxPoolManagerAsync(state_store=store).destroy(name)
        assert again.state == PoolDestroyState.DESTROYED and again.persistent_state_cleared is False
        assert await live_pool_sandboxes(name) == []
    finally:
        await pool.shutdown(graceful=False)


def test_sync_pool_warms_acquires_and_releases(server):
    name = f"sync-{uuid.uuid4().hex[:8]}"
    pool = SandboxPoolSync(
        pool_name=name,
        max_idle=1,
        state_store=InMemoryPoolStateStore(),
        connection_config=ConnectionConfigSync(),
        creation_spec=spec(name),
        idle_timeout=timedelta(minutes=5),
        warmup_health_check_polling_interval=timedelta(milliseconds=100),
        drain_timeout=timedelta(seconds=5),
    )
    with pool:
        deadline = time.monotonic() + 30
        while not pool.snapshot_idle_entries():
            assert time.monotonic() < deadline, "no idle sandbox within 30 s"
            time.sleep(0.2)
        idle_id = pool.snapshot_idle_entries()[0].sandbox_id
        sandbox = pool.acquire(policy=AcquirePolicy.FAIL_FAST)
        try:
            assert sandbox.id == idle_id
            assert sandbox.commands.run("echo sync").exit_code == 0
        finally:
            sandbox.kill()
    assert pool.snapshot().state == PoolState.STOPPED
    released = {e.sandbox_id for e in pool.snapshot_idle_entries()}
    assert pool.release_all_idle() == len(released)
    manager = SandboxManagerSync.create()
    for sandbox_id in released:
        try:
            state = manager.get_sandbox_info(sandbox_id).status.state
        except SandboxApiException as e:
            assert e.status_code == 404
        else:
            assert state in ("Terminated", "Failed", "Stopping")


def test_pool_arguments_are_validated():
    common = dict(
        pool_name="p",
        state_store=InMemoryPoolStateStore(),
        connection_config=ConnectionConfigSync(),
        creation_spec=spec("v"),
    )
    with pytest.raises(ValueError, match="max_idle"):
        SandboxPoolSync(max_idle=-1, **common)
    with pytest.raises(ValueError, match="acquire_min_remaining_ttl"):
        SandboxPoolSync(
            max_idle=1, idle_timeout=timedelta(seconds=10), acquire_min_remaining_ttl=timedelta(seconds=10), **common
        )
    with pytest.raises(ValueError, match="pool_name"):
        SandboxPoolSync(**{**common, "pool_name": " "}, max_idle=1)
    with pytest.raises(TypeError, match="needs a blocking state store"):
        SandboxPoolSync(**{**common, "state_store": InMemoryAsyncPoolStateStore()}, max_idle=1)
    with pytest.raises(TypeError, match="needs an async state store"):
        SandboxPoolAsync(
            pool_name="p",
            max_idle=1,
            state_store=InMemoryPoolStateStore(),
            connection_config=ConnectionConfig(),
            creation_spec=spec("v"),
        )


def test_public_names_and_defaults_match_the_official_1_1_1():
    import inspect

    import opensandbox
    import opensandbox.pool
    import opensandbox.pool_async
    import opensandbox.pool_manager
    import opensandbox.pool_redis
    from opensandbox.pool import PoolDestroyOptions

    official_top = {
        "SandboxPoolSync", "SandboxPoolAsync", "AsyncSandboxPool", "SandboxPool", "AcquirePolicy",
        "AsyncPooledSandboxCreator", "PooledSandboxCreateContext", "PooledSandboxCreateReason", "PooledSandboxCreator",
        "PoolCreationSpec", "PoolDestroyOptions", "PoolDestroyResult", "PoolDestroyState", "PoolDestroyStrategy",
        "InMemoryAsyncPoolStateStore", "InMemoryPoolStateStore", "SandboxPoolManager", "SandboxPoolManagerAsync",
        "SandboxPoolManagerSync",
    }  # fmt: skip
    official_pool = official_top | {
        "AsyncPoolConfig", "AsyncPoolStateStore", "IdleEntry", "PoolConfig", "PoolLifecycleState", "PoolSnapshot",
        "PoolState", "PoolStateStore", "StoreCounters", "TakeIdleResult",
    }  # fmt: skip
    assert official_top <= set(opensandbox.__all__)
    assert official_pool == set(opensandbox.pool.__all__)
    assert set(opensandbox.pool_redis.__all__) == {"AsyncRedisPoolStateStore", "RedisPoolStateStore"}
    assert set(opensandbox.pool_manager.__all__) == {
        "SandboxPoolManager",
        "SandboxPoolManagerAsync",
        "SandboxPoolManagerSync",
    }
    assert set(opensandbox.pool_async.__all__) == {
        "AsyncSandboxPool",
        "InMemoryAsyncPoolStateStore",
        "SandboxPoolAsync",
    }
    assert opensandbox.SandboxPool is opensandbox.SandboxPoolSync
    assert opensandbox.AsyncSandboxPool is opensandbox.SandboxPoolAsync
    assert opensandbox.SandboxPoolManager is opensandbox.SandboxPoolManagerSync
    assert [p.value for p in AcquirePolicy] == [
        "FAIL_FAST",
        "DIRECT_CREATE",
        "RETRY_NEXT_IDLE",
        "RETRY_NEXT_IDLE_THEN_CREATE",
    ]
    for pool_class in (SandboxPoolSync, SandboxPoolAsync):
        params = inspect.signature(pool_class).parameters
        defaults = {name: p.default for name, p in params.items() if p.default is not p.empty}
        assert defaults["warmup_create_qps"] == 10 and defaults["warmup_concurrency"] == 128
        assert defaults["primary_lock_ttl"] == timedelta(seconds=60) and defaults["degraded_threshold"] == 3
        assert defaults["warmup_health_check_polling_interval"] == timedelta(milliseconds=500)
        assert defaults["idle_timeout"] == timedelta(hours=24) and defaults["max_acquire_retries"] == 3
        assert "reconcile_interval" not in params
        assert all(p.kind is p.KEYWORD_ONLY for name, p in params.items())
    options = PoolDestroyOptions()
    assert (options.tombstone_ttl, options.drain_timeout) == (timedelta(days=7), timedelta(seconds=30))
    from opensandbox.exceptions import PoolDestroyIncompleteException

    assert PoolDestroyIncompleteException().error.code == SandboxError.POOL_DESTROY_INCOMPLETE
    assert PoolEmptyException().error.code == SandboxError.POOL_EMPTY


def test_pool_loads_on_first_use_and_keeps_every_name():
    # `import opensandbox` must not pay for the pool (its Redis layout, locks and
    # threads); every official pool name still resolves from the top level.
    import subprocess
    import sys

    code = (
        "import sys, opensandbox, opensandbox.sync\n"
        "assert not [m for m in sys.modules if 'pool' in m], sorted(m for m in sys.modules if 'pool' in m)\n"
        "from opensandbox import *\n"
        "import opensandbox as o\n"
        "missing = [n for n in o.__all__ if not hasattr(o, n)]\n"
        "assert not missing, missing\n"
        "assert o.SandboxPoolSync is o.SandboxPool and o.AsyncSandboxPool is o.SandboxPoolAsync\n"
        "from opensandbox.sync import SandboxPoolSync\n"
        "assert SandboxPoolSync is o.SandboxPoolSync\n"
        "try:\n"
        "    o.NoSuchName\n"
        "except AttributeError as e:\n"
        "    assert 'NoSuchName' in str(e)\n"
        "else:\n"
        "    raise AssertionError('unknown attribute resolved')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_import_loads_only_what_the_program_takes():
    # `import opensandbox` loads no model, service or asyncio; the async API loads its
    # models but not asyncio (the first awaited call does), so a blocking program never
    # imports asyncio, ssl or logging. Every public name still resolves, to one object.
    import subprocess
    import sys

    code = (
        "import sys, opensandbox\n"
        "heavy = ('pydantic', 'asyncio', 'opensandbox.models', 'opensandbox.sandbox', 'opensandbox.sync')\n"
        "assert not [m for m in heavy if m in sys.modules], [m for m in heavy if m in sys.modules]\n"
        "from opensandbox import Sandbox, SandboxSync, ConnectionConfig\n"
        "assert not [m for m in ('asyncio', 'logging', 'ssl') if m in sys.modules]\n"
        "lazy = ('opensandbox.services.pty', 'opensandbox.models.isolated', 'opensandbox.models.filesystem')\n"
        "assert not [m for m in lazy if m in sys.modules], [m for m in lazy if m in sys.modules]\n"
        "import opensandbox.sandbox, opensandbox.sync, opensandbox.config\n"
        "assert Sandbox is opensandbox.sandbox.Sandbox and SandboxSync is opensandbox.sync.SandboxSync\n"
        "assert ConnectionConfig is opensandbox.config.ConnectionConfig\n"
        "assert 'Sandbox' in dir(opensandbox) and 'SandboxManagerSync' in dir(opensandbox)\n"
        "from opensandbox.models.sandboxes import SandboxInfo\n"
        "info = SandboxInfo.model_validate({'id': 'a', 'status': {'state': 'Running'}, 'entrypoint': ['x'],\n"
        "    'created_at': '2026-01-01T00:00:00Z', 'image': {'image': 'i'},\n"
        "    'allocation': {'mode': 'pool', 'poolRef': 'p', 'state': 'Bound'}})\n"
        "assert info.allocation.pool_ref == 'p', info\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
