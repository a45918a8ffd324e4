package com.alibaba.opensandbox.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolAcquireFailedException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolDestroyedException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolEmptyException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolNotRunningException;
import com.alibaba.opensandbox.sandbox.domain.pool.AcquirePolicy;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolCreationSpec;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyOptions;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyResult;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyState;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyStrategy;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolLifecycleState;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolSnapshot;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolState;
import com.alibaba.opensandbox.sandbox.domain.pool.PooledSandboxCreateContext;
import com.alibaba.opensandbox.sandbox.domain.pool.TakeIdleResult;
import com.alibaba.opensandbox.sandbox.infrastructure.pool.InMemoryPoolStateStore;
import com.alibaba.opensandbox.sandbox.pool.SandboxPool;
import com.alibaba.opensandbox.sandbox.pool.SandboxPoolManager;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/** The sandbox pool: the in-memory store's contract (no server), then the pool against the server. */
class PoolTest {

    @Test
    void inMemoryStoreHandsEachIdOnceOldestFirst() {
        InMemoryPoolStateStore s = new InMemoryPoolStateStore();
        s.putIdle("p", "a");
        s.putIdle("p", "b");
        s.putIdle("p", "a"); // idempotent
        s.putIdle("q", "c"); // another namespace
        assertEquals(2, s.snapshotCounters("p").getIdleCount());
        s.removeIdle("p", "a");
        s.putIdle("p", "a"); // removed then put again: queued last
        assertEquals("b", s.tryTakeIdle("p"));
        assertEquals("a", s.tryTakeIdle("p"));
        s.putIdle("p", "b");
        s.removeIdle("p", "b");
        s.removeIdle("p", "b");
        assertNull(s.tryTakeIdle("p"));
        assertEquals("c", s.tryTakeIdle("q"));
        assertThrows(InvalidArgumentException.class, () -> s.putIdle(" ", "x"));
        assertThrows(InvalidArgumentException.class, () -> s.putIdle("p", ""));
        assertNull(s.getMaxIdle("p"));
        s.setMaxIdle("p", 4);
        assertEquals(4, s.getMaxIdle("p"));
        assertThrows(InvalidArgumentException.class, () -> s.setMaxIdle("p", -1));
    }

    @Test
    void inMemoryStoreExpiresAndSkipsNearExpiryEntries() throws Exception {
        InMemoryPoolStateStore s = new InMemoryPoolStateStore();
        s.setIdleEntryTtl("p", Duration.ofSeconds(10));
        s.putIdle("p", "short");
        s.setIdleEntryTtl("p", Duration.ofHours(1));
        s.putIdle("p", "long");
        // "short" has ~10 s left: under a 1 min minimum it is skipped and reported alive.
        TakeIdleResult r = s.tryTakeIdle("p", Duration.ofMinutes(1));
        assertEquals("long", r.getSandboxId());
        assertEquals(List.of("short"), r.getDiscardedAliveSandboxIds());
        s.putIdle("p", "x");
        assertEquals(List.of("x"), s.reapExpiredIdle("p", Instant.now(), Duration.ofHours(2)));
        assertEquals(0, s.snapshotIdleEntries("p").size());
        s.setIdleEntryTtl("p", Duration.ofMillis(1));
        s.putIdle("p", "gone");
        Thread.sleep(5);
        // Already expired: dropped silently, not reported.
        assertEquals(List.of(), s.reapExpiredIdle("p", Instant.now(), Duration.ZERO));
        assertThrows(InvalidArgumentException.class, () -> s.setIdleEntryTtl("p", Duration.ZERO));
    }

    @Test
    void inMemoryPrimaryLockHasOneOwner() {
        InMemoryPoolStateStore s = new InMemoryPoolStateStore();
        Duration ttl = Duration.ofSeconds(30);
        assertFalse(s.renewPrimaryLock("p", "a", ttl)); // nothing to renew
        assertTrue(s.tryAcquirePrimaryLock("p", "a", ttl));
        assertTrue(s.tryAcquirePrimaryLock("p", "a", ttl));
        assertFalse(s.tryAcquirePrimaryLock("p", "b", ttl));
        assertFalse(s.renewPrimaryLock("p", "b", ttl));
        assertTrue(s.renewPrimaryLock("p", "a", ttl));
        s.releasePrimaryLock("p", "b"); // not the owner: no effect
        assertFalse(s.tryAcquirePrimaryLock("p", "b", ttl));
        s.releasePrimaryLock("p", "a");
        assertTrue(s.tryAcquirePrimaryLock("p", "b", ttl));
        assertThrows(InvalidArgumentException.class, () -> s.tryAcquirePrimaryLock("p", "c", Duration.ZERO));
    }

    @Test
    void poolBuilderChecksItsInput() {
        PoolCreationSpec spec = PoolCreationSpec.builder().image("python:3.11").build();
        assertEquals(List.of("tail", "-f", "/dev/null"), spec.getEntrypoint());
        assertThrows(InvalidArgumentException.class, () -> PoolCreationSpec.builder().build());
        assertThrows(InvalidArgumentException.class, () -> SandboxPool.builder().poolName(" "));
        assertThrows(InvalidArgumentException.class, () -> SandboxPool.builder().maxIdle(-1));
        assertThrows(InvalidArgumentException.class, () -> SandboxPool.builder().poolName("p").maxIdle(1).build());
        assertThrows(InvalidArgumentException.class, () -> SandboxPool.builder().maxAcquireRetries(0));
        assertThrows(InvalidArgumentException.class, () -> SandboxPool.builder().poolName("p").maxIdle(1)
                .stateStore(new InMemoryPoolStateStore()).creationSpec(spec).idleTimeout(Duration.ofMinutes(1))
                .acquireMinRemainingTtl(Duration.ofMinutes(1)).build());
        assertEquals(1, AcquirePolicy.DIRECT_CREATE.maxIdleAttempts(3));
        assertEquals(3, AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE.maxIdleAttempts(3));
        assertTrue(AcquirePolicy.RETRY_NEXT_IDLE_THEN_CREATE.fallsThroughToDirectCreate());
        assertFalse(AcquirePolicy.RETRY_NEXT_IDLE.fallsThroughToDirectCreate());
        SandboxPool pool = SandboxPool.builder().poolName("p").maxIdle(1).stateStore(new InMemoryPoolStateStore())
                .creationSpec(spec).build();
        assertThrows(PoolNotRunningException.class, pool::acquire);
        PoolSnapshot snap = pool.snapshot();
        assertEquals(PoolState.STOPPED, snap.getState());
        assertEquals(PoolLifecycleState.NOT_STARTED, snap.getLifecycleState());
        pool.shutdown(true); // not started: a no-op
    }

    @Test
    void destroyFencesTheNamespaceAndLeavesATombstone() throws Exception {
        InMemoryPoolStateStore store = new InMemoryPoolStateStore();
        store.putIdle("d", "sb-1");
        store.putIdle("d", "sb-2");
        store.setMaxIdle("d", 2);
        assertTrue(store.tryAcquirePrimaryLock("d", "leader", Duration.ofMinutes(1)));
        // Nothing listens there: the kills fail (best effort) but the destroy completes.
        com.alibaba.opensandbox.sandbox.config.ConnectionConfig nowhere =
                com.alibaba.opensandbox.sandbox.config.ConnectionConfig.builder().domain("127.0.0.1:9").build();
        SandboxPoolManager m = SandboxPoolManager.builder().stateStore(store).connectionConfig(nowhere).build();
        PoolDestroyResult r = m.destroy("d", new PoolDestroyOptions(PoolDestroyStrategy.FORCE, Duration.ofMillis(300),
                Duration.ZERO));
        assertEquals(PoolDestroyState.DESTROYED, r.getState());
        assertEquals(2, r.getDrainedIdleCount());
        assertEquals(0, r.getKilledIdleCount());
        assertTrue(r.getPersistentStateCleared());
        assertEquals(PoolDestroyState.DESTROYED, store.getDestroyState("d"));
        assertThrows(PoolDestroyedException.class, () -> store.putIdle("d", "sb-3"));
        assertThrows(PoolDestroyedException.class, () -> store.setMaxIdle("d", 1));
        assertFalse(store.tryAcquirePrimaryLock("d", "leader", Duration.ofMinutes(1)));
        assertNull(store.getMaxIdle("d"));
        PoolDestroyResult again = m.destroy("d");
        assertEquals(0, again.getDrainedIdleCount());
        assertFalse(again.getPersistentStateCleared());
        SandboxPool pool = SandboxPool.builder().poolName("d").maxIdle(1).stateStore(store).connectionConfig(nowhere)
                .creationSpec(PoolCreationSpec.builder().image("python:3.11").build()).build();
        assertThrows(PoolDestroyedException.class, pool::start);
        assertEquals(PoolLifecycleState.STOPPED, pool.snapshot().getLifecycleState());
        Thread.sleep(350); // the tombstone lapses: the name is free again
        assertEquals(PoolDestroyState.ACTIVE, store.getDestroyState("d"));
        store.putIdle("d", "sb-4");
        assertThrows(InvalidArgumentException.class, () -> new PoolDestroyOptions(PoolDestroyStrategy.FORCE, Duration.ZERO,
                Duration.ZERO));
    }

    @Test
    void theHeartbeatKeepsThePrimaryLockBetweenReconciles() throws Exception {
        InMemoryPoolStateStore store = new InMemoryPoolStateStore();
        SandboxPool pool = SandboxPool.builder().poolName("hb").ownerId("me").maxIdle(0).stateStore(store)
                .connectionConfig(com.alibaba.opensandbox.sandbox.config.ConnectionConfig.builder().domain("127.0.0.1:9").build())
                .creationSpec(PoolCreationSpec.builder().image("python:3.11").build())
                .reconcileInterval(Duration.ofHours(1)).primaryLockTtl(Duration.ofMillis(300))
                .warmupReadyTimeout(Duration.ofMillis(100)).build();
        pool.start();
        try {
            pool.start(); // idempotent
            Thread.sleep(1000); // > 3 lock TTLs, one reconcile: only the heartbeat kept it
            assertFalse(store.tryAcquirePrimaryLock("hb", "other", Duration.ofSeconds(1)));
            assertEquals(PoolLifecycleState.RUNNING, pool.snapshot().getLifecycleState());
            assertEquals(0, pool.snapshot().getMaxIdle());
        } finally {
            pool.shutdown(false);
        }
        assertTrue(store.tryAcquirePrimaryLock("hb", "other", Duration.ofSeconds(1)));
    }

    @Test
    @EnabledIfEnvironmentVariable(named = "OPEN_SANDBOX_DOMAIN", matches = ".+")
    void poolWarmsAcquiresAndFallsBack() throws Exception {
        InMemoryPoolStateStore store = new InMemoryPoolStateStore();
        String name = "jvm-" + UUID.randomUUID();
        SandboxPool pool = SandboxPool.builder().poolName(name).maxIdle(1).stateStore(store)
                .creationSpec(PoolCreationSpec.builder().image("python:3.11").metadata("pool", name).build())
                .reconcileInterval(Duration.ofMillis(100))
                .warmupSandboxPreparer(sb -> sb.files().writeFile("/tmp/prepared-" + name, "yes"))
                .build();
        pool.start();
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (pool.snapshot().getIdleCount() < 1) {
                assertTrue(System.nanoTime() < deadline, "no warm sandbox: " + pool.snapshot());
                Thread.sleep(50);
            }
            String warmId = pool.snapshotIdleEntries().get(0).getSandboxId();
            // A stale id in front of it: FAIL_FAST tries one candidate only and fails...
            store.removeIdle(name, warmId);
            store.putIdle(name, "no-such-sandbox");
            store.putIdle(name, warmId);
            assertThrows(PoolAcquireFailedException.class, () -> pool.acquire(null, AcquirePolicy.FAIL_FAST));
            // ...RETRY_NEXT_IDLE drops it and takes the next one.
            store.removeIdle(name, warmId);
            store.putIdle(name, "no-such-sandbox-2");
            store.putIdle(name, warmId);
            Sandbox sb = pool.acquire(Duration.ofMinutes(5), AcquirePolicy.RETRY_NEXT_IDLE);
            try {
                assertEquals(warmId, sb.getId());
                assertEquals("yes", sb.files().readFile("/tmp/prepared-" + name));
                assertEquals(PoolState.HEALTHY, pool.snapshot().getState());
            } finally {
                sb.kill();
                sb.close();
            }
            pool.resize(0);
            assertTrue(pool.releaseAllIdle() >= 0);
            while (pool.snapshot().getIdleCount() > 0) {
                assertTrue(pool.releaseAllIdle() >= 0);
                Thread.sleep(50);
            }
            assertThrows(PoolEmptyException.class, () -> pool.acquire(null, AcquirePolicy.FAIL_FAST));
            Sandbox direct = pool.acquire(); // DIRECT_CREATE
            try {
                assertNotEquals(warmId, direct.getId());
                assertEquals(0, direct.commands().run("true").getExitCode());
            } finally {
                direct.kill();
                direct.close();
            }
            // Destroy while running: the instance stops handing out and creating.
            pool.resize(1);
            deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (pool.snapshot().getIdleCount() < 1) {
                assertTrue(System.nanoTime() < deadline, "no warm sandbox after resize: " + pool.snapshot());
                Thread.sleep(50);
            }
            PoolDestroyResult r = SandboxPoolManager.builder().stateStore(store)
                    .connectionConfig(com.alibaba.opensandbox.sandbox.config.ConnectionConfig.builder().build()).build()
                    .destroy(name);
            assertEquals(1, r.getKilledIdleCount());
            assertThrows(PoolDestroyedException.class, () -> pool.acquire());
        } finally {
            pool.shutdown(true);
        }
        assertEquals(PoolLifecycleState.STOPPED, pool.snapshot().getLifecycleState());
        assertThrows(PoolNotRunningException.class, pool::acquire);
        // Destroyed: nobody leads it any more.
        assertFalse(store.tryAcquirePrimaryLock(name, "other", Duration.ofSeconds(5)));
    }

    @Test
    @EnabledIfEnvironmentVariable(named = "OPEN_SANDBOX_DOMAIN", matches = ".+")
    void sandboxCreatorMakesWarmupsAndDirectCreates() throws Exception {
        InMemoryPoolStateStore store = new InMemoryPoolStateStore();
        String name = "jvm-creator-" + UUID.randomUUID();
        List<PooledSandboxCreateContext> calls = new CopyOnWriteArrayList<>();
        SandboxPool pool = SandboxPool.builder().poolName(name).ownerId("owner-1").maxIdle(1).stateStore(store)
                .creationSpec(PoolCreationSpec.builder().image("python:3.11").build())
                .idleTimeout(Duration.ofMinutes(10)).reconcileInterval(Duration.ofMillis(100))
                .warmupReadyTimeout(Duration.ofSeconds(20)).acquireReadyTimeout(Duration.ofSeconds(25))
                .sandboxCreator(ctx -> {
                    calls.add(ctx);
                    // The creator decides what runs: here an env var the spec does not have.
                    return Sandbox.builder().image("python:3.11").connectionConfig(ctx.getCreateConnectionConfig())
                            .env("CREATED_BY", ctx.getReason().name()).metadata("pool", ctx.getPoolName())
                            .timeout(ctx.getIdleTimeout()).readyTimeout(ctx.getReadyTimeout())
                            .healthCheckPollingInterval(ctx.getHealthCheckPollingInterval())
                            .skipHealthCheck(ctx.getSkipHealthCheck()).build();
                })
                .build();
        pool.start();
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (pool.snapshot().getIdleCount() < 1) {
                assertTrue(System.nanoTime() < deadline, "no warm sandbox: " + pool.snapshot());
                Thread.sleep(50);
            }
            PooledSandboxCreateContext w = calls.get(0);
            assertEquals(PooledSandboxCreateContext.Reason.WARMUP, w.getReason());
            assertEquals(name, w.getPoolName());
            assertEquals("owner-1", w.getOwnerId());
            assertEquals(Duration.ofMinutes(10), w.getIdleTimeout());
            assertEquals(Duration.ofSeconds(20), w.getReadyTimeout());
            assertEquals(Duration.ofMillis(200), w.getHealthCheckPollingInterval());
            assertFalse(w.getSkipHealthCheck());
            assertNull(w.getHealthCheck());
            try (Sandbox sb = pool.acquire(null, AcquirePolicy.FAIL_FAST)) {
                assertEquals("WARMUP", sb.commands().run("printf %s \"$CREATED_BY\"").getLogs().getStdout().get(0)
                        .getText());
                sb.kill();
            }
            pool.resize(0);
            while (pool.snapshot().getIdleCount() > 0) {
                pool.releaseAllIdle();
                Thread.sleep(50);
            }
            try (Sandbox direct = pool.acquire()) {
                PooledSandboxCreateContext d = calls.get(calls.size() - 1);
                assertEquals(PooledSandboxCreateContext.Reason.DIRECT_CREATE, d.getReason());
                assertEquals(Duration.ofSeconds(25), d.getReadyTimeout());
                assertEquals("DIRECT_CREATE", direct.commands().run("printf %s \"$CREATED_BY\"").getLogs().getStdout()
                        .get(0).getText());
                direct.kill();
            }
        } finally {
            pool.shutdown(false);
        }
    }
}
