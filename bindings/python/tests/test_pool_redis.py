"""The Redis pool state stores against a real ``redis-server`` (started here on a free
port; the store-contract tests run on the in-memory store too), and pool instances
sharing one Redis namespace against the reference server."""

from __future__ import annotations

import asyncio
import base64
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
import redis
import redis.asyncio

from opensandbox import (
    AcquirePolicy,
    InMemoryPoolStateStore,
    PoolCreationSpec,
    PoolDestroyState,
    SandboxManager,
    SandboxPoolAsync,
)
from opensandbox.config import ConnectionConfig
from opensandbox.exceptions import (
    PoolDestroyedException,
    PoolStateStoreUnavailableException,
    SandboxError,
)
from opensandbox.models.sandboxes import SandboxFilter
from opensandbox.pool import SandboxPoolManagerAsync, SandboxPoolManagerSync
from opensandbox.pool_redis import AsyncRedisPoolStateStore, RedisPoolStateStore


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def redis_port():
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server not found: scripts/setup.sh --all installs it (Debian package redis-server)")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="opensandbox-redis-")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("redis-server did not start")
            time.sleep(0.05)
    yield port
    client.close()
    proc.terminate()
    proc.wait(timeout=10)
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(params=["redis", "memory"])
def sync_store(request):
    """The blocking Redis store, and the in-memory one held to the same contract."""
    if request.param == "memory":
        yield InMemoryPoolStateStore()
        return
    client = redis.Redis(port=request.getfixturevalue("redis_port"))
    yield RedisPoolStateStore(client, key_prefix=f"test-{uuid.uuid4().hex[:8]}")
    client.close()


def test_keys_follow_the_official_layout(redis_port):
    client = redis.Redis(port=redis_port)
    store = RedisPoolStateStore(client)
    store.set_idle_entry_ttl("pool/é", timedelta(minutes=5))
    store.put_idle("pool/é", "sb-1")
    tag = base64.urlsafe_b64encode("pool/é".encode()).decode().rstrip("=")
    base = f"opensandbox:pool:{{{tag}}}:"
    assert client.lrange(base + "idle:list", 0, -1) == [b"sb-1"]
    assert set(client.hkeys(base + "idle:expires")) == {b"sb-1"}
    assert client.get(base + "idleTtlMillis") == b"300000"
    store.clear_pool_state("pool/é")
    client.close()


def test_idle_membership_is_fifo_and_each_id_is_taken_once(sync_store):
    store = sync_store
    for sandbox_id in ("a", "b", "c"):
        store.put_idle("p", sandbox_id)
    store.put_idle("p", "a")  # already idle: no second entry
    assert [e.sandbox_id for e in store.snapshot_idle_entries("p")] == ["a", "b", "c"]
    assert store.snapshot_counters("p").idle_count == 3
    store.remove_idle("p", "b")
    assert store.try_take_idle("p") == "a"
    assert store.try_take_idle("p") == "c"
    assert store.try_take_idle("p") is None
    with pytest.raises(ValueError):
        store.put_idle("p", " ")
    with pytest.raises(ValueError):
        store.put_idle(" ", "x")


def test_near_expiry_entries_are_skipped_and_reported(sync_store):
    store = sync_store
    store.set_idle_entry_ttl("p", timedelta(seconds=10))
    store.put_idle("p", "short")
    store.set_idle_entry_ttl("p", timedelta(minutes=10))
    store.put_idle("p", "long")
    taken = store.try_take_idle_min_ttl("p", timedelta(seconds=30))
    assert taken.sandbox_id == "long" and taken.discarded_alive_sandbox_ids == ("short",)
    store.set_idle_entry_ttl("p", timedelta(seconds=10))
    store.put_idle("p", "short2")
    alive = store.reap_expired_idle_min_ttl("p", datetime.now(timezone.utc), timedelta(seconds=30))
    assert alive == ("short2",) and store.snapshot_counters("p").idle_count == 0
    store.set_idle_entry_ttl("p", timedelta(milliseconds=50))
    store.put_idle("p", "expired")
    time.sleep(0.1)
    # Already expired: dropped without being reported (the server reaped it).
    assert store.try_take_idle_min_ttl("p", timedelta(seconds=1)).discarded_alive_sandbox_ids == ()


def test_primary_lock_has_one_owner_at_a_time(sync_store):
    store, ttl = sync_store, timedelta(seconds=30)
    assert store.try_acquire_primary_lock("p", "one", ttl)
    assert store.try_acquire_primary_lock("p", "one", ttl)  # re-entrant for its owner
    assert not store.try_acquire_primary_lock("p", "two", ttl)
    assert not store.renew_primary_lock("p", "two", ttl)
    store.release_primary_lock("p", "two")  # not the owner: no effect
    assert store.renew_primary_lock("p", "one", ttl)
    store.release_primary_lock("p", "one")
    assert store.try_acquire_primary_lock("p", "two", timedelta(milliseconds=100))
    time.sleep(0.2)  # lapsed
    assert store.try_acquire_primary_lock("p", "one", ttl)


def test_destroy_fences_writes_and_tombstone_lapses(sync_store):
    store = sync_store
    store.set_max_idle("p", 3)
    store.put_idle("p", "a")
    store.begin_destroy("p", "admin")
    assert store.get_destroy_state("p") == PoolDestroyState.DESTROYING
    with pytest.raises(PoolDestroyedException) as e:
        store.put_idle("p", "b")
    assert e.value.error.code == SandboxError.POOL_DESTROYED
    with pytest.raises(PoolDestroyedException):
        store.set_max_idle("p", 1)
    assert not store.try_acquire_primary_lock("p", "one", timedelta(seconds=5))
    store.clear_pool_state("p")
    store.mark_destroyed("p", "admin", timedelta(milliseconds=200))
    assert store.get_destroy_state("p") == PoolDestroyState.DESTROYED
    assert store.get_max_idle("p") is None and store.try_take_idle("p") is None
    with pytest.raises(PoolDestroyedException):
        store.begin_destroy("p", "admin")
    time.sleep(0.3)
    assert store.get_destroy_state("p") == PoolDestroyState.ACTIVE


def test_manager_destroy_on_an_idle_free_namespace(sync_store):
    result = SandboxPoolManagerSync(state_store=sync_store).destroy("never-used")
    assert result.state == PoolDestroyState.DESTROYED and result.persistent_state_cleared
    assert (result.drained_idle_count, result.killed_idle_count) == (0, 0)


def test_client_type_and_outage_errors(redis_port):
    with pytest.raises(TypeError, match="Redis client"):
        RedisPoolStateStore(redis.asyncio.Redis(port=redis_port))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Redis client"):
        AsyncRedisPoolStateStore(redis.Redis(port=redis_port))  # type: ignore[arg-type]
    down = RedisPoolStateStore(redis.Redis(port=free_port(), socket_connect_timeout=0.5))
    with pytest.raises(PoolStateStoreUnavailableException) as e:
        down.try_take_idle("p")
    assert e.value.error.code == SandboxError.POOL_STATE_STORE_UNAVAILABLE
    assert "operation=try_take_idle pool_name=p" in str(e.value)


async def test_two_pools_share_one_redis_namespace(server, redis_port):
    """Two instances on one Redis store: one primary warms, both hand out distinct idle
    sandboxes, the other takes over when the primary shuts down, destroy stops both."""
    name = f"shared-{uuid.uuid4().hex[:8]}"
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    clients = [redis.asyncio.Redis(port=redis_port) for _ in range(2)]
    stores = [AsyncRedisPoolStateStore(c, key_prefix=prefix) for c in clients]
    pools = [
        SandboxPoolAsync(
            pool_name=name,
            owner_id=f"owner-{i}",
            max_idle=2,
            state_store=store,
            connection_config=ConnectionConfig(),
            creation_spec=PoolCreationSpec(image="python:3.11", metadata={"pool-test": name}),
            idle_timeout=timedelta(minutes=5),
            primary_lock_ttl=timedelta(seconds=3),
            warmup_health_check_polling_interval=timedelta(milliseconds=100),
            drain_timeout=timedelta(seconds=5),
        )
        for i, store in enumerate(stores)
    ]
    manager = await SandboxManager.create()

    async def live():
        page = await manager.list_sandbox_infos(SandboxFilter(metadata={"pool-test": name}, states=["Running"]))
        return {i.id for i in page.sandbox_infos}

    async def idle_ids():
        return {e.sandbox_id for e in await pools[0].snapshot_idle_entries()}

    async def wait_idle(count):
        deadline = time.monotonic() + 30
        while len(await idle_ids()) < count:
            assert time.monotonic() < deadline, f"fewer than {count} idle sandboxes after 30 s"
            await asyncio.sleep(0.2)

    lock_key = f"{prefix}:{{{base64.urlsafe_b64encode(name.encode()).decode().rstrip('=')}}}:lock"
    try:
        await asyncio.gather(*(p.start() for p in pools))
        await wait_idle(2)
        primary = (await clients[0].get(lock_key)).decode()
        assert primary in ("owner-0", "owner-1")
        await asyncio.sleep(1.5)  # a few more ticks: the other instance must not warm too
        assert len(await live()) == 2, "only the primary warms: never more than max_idle"

        warmed = await idle_ids()
        got = await asyncio.gather(*(p.acquire(policy=AcquirePolicy.FAIL_FAST) for p in pools))
        assert {s.id for s in got} == warmed, "each idle sandbox handed out once"
        for sandbox in got:
            await sandbox.kill()

        # The primary leaves (releasing the lock): the other one takes over and refills.
        leaving = 0 if primary == "owner-0" else 1
        await pools[leaving].shutdown()
        deadline = time.monotonic() + 5
        while await clients[0].get(lock_key) != f"owner-{1 - leaving}".encode():
            assert time.monotonic() < deadline, "the remaining instance did not take the primary lock"
            await asyncio.sleep(0.1)
        await wait_idle(2)
        sandbox = await pools[1 - leaving].acquire(policy=AcquirePolicy.FAIL_FAST)
        await sandbox.kill()
        await wait_idle(2)  # refilled by the new primary
        await asyncio.sleep(1.2)  # one more tick: nothing left warming when destroy runs

        result = await SandboxPoolManagerAsync(state_store=stores[leaving]).destroy(name)
        assert (result.drained_idle_count, result.killed_idle_count) == (2, 2)
        with pytest.raises(PoolDestroyedException):
            await pools[1 - leaving].acquire()
        with pytest.raises(PoolDestroyedException):
            await pools[leaving].start()
        assert await live() == set()
        assert await clients[0].keys(f"{prefix}:*") != []  # the tombstone stays
    finally:
        for p in pools:
            await p.shutdown(graceful=False)
        for c in clients:
            await c.aclose()


def test_sync_pool_on_the_sync_redis_store(server, sync_store):
    from opensandbox import SandboxPoolSync
    from opensandbox.config import ConnectionConfigSync

    name = f"sync-redis-{uuid.uuid4().hex[:8]}"
    pool = SandboxPoolSync(
        pool_name=name,
        max_idle=1,
        state_store=sync_store,
        connection_config=ConnectionConfigSync(),
        creation_spec=PoolCreationSpec(image="python:3.11", metadata={"pool-test": name}),
        idle_timeout=timedelta(minutes=5),
        warmup_health_check_polling_interval=timedelta(milliseconds=100),
        drain_timeout=timedelta(seconds=5),
    )
    with pool:
        deadline = time.monotonic() + 30
        while sync_store.snapshot_counters(name).idle_count < 1:
            assert time.monotonic() < deadline, "no idle sandbox within 30 s"
            time.sleep(0.2)
        assert sync_store.get_max_idle(name) == 1
        sandbox = pool.acquire(sandbox_timeout=timedelta(minutes=2), policy=AcquirePolicy.FAIL_FAST)
        try:
            assert sandbox.commands.run("echo redis").exit_code == 0
        finally:
            sandbox.kill()
    result = SandboxPoolManagerSync(state_store=sync_store).destroy(name)
    assert result.state == PoolDestroyState.DESTROYED and result.persistent_state_cleared
