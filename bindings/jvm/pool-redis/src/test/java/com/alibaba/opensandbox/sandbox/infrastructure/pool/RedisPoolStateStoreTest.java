package com.alibaba.opensandbox.sandbox.infrastructure.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.opensandbox.sandbox.Sandbox;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolDestroyedException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.PoolStateStoreUnavailableException;
import com.alibaba.opensandbox.sandbox.domain.pool.AcquirePolicy;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolCreationSpec;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolDestroyState;
import com.alibaba.opensandbox.sandbox.domain.pool.TakeIdleResult;
import com.alibaba.opensandbox.sandbox.pool.SandboxPool;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import redis.clients.jedis.JedisPooled;

/** Against a real redis-server started here (REDIS_SERVER or redis-server on PATH / /usr/bin). */
class RedisPoolStateStoreTest {
    static Process server;
    static JedisPooled redis;
    static int port;

    static String redisBinary() {
        String env = System.getenv("REDIS_SERVER");
        if (env != null && !env.isEmpty()) {
            return env;
        }
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(File.pathSeparator)) {
            File f = new File(dir, "redis-server");
            if (f.canExecute()) {
                return f.getPath();
            }
        }
        throw new IllegalStateException("redis-server not found: install it (apt-get install redis-server) or set REDIS_SERVER");
    }

    @BeforeAll
    static void startRedis() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        server = new ProcessBuilder(redisBinary(), "--port", Integer.toString(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no").redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        redis = new JedisPooled("127.0.0.1", port);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try {
                redis.ping();
                return;
            } catch (RuntimeException e) {
                if (System.nanoTime() > deadline || !server.isAlive()) {
                    throw new IOException("redis-server did not start on port " + port, e);
                }
                Thread.sleep(20);
            }
        }
    }

    @AfterAll
    static void stopRedis() throws Exception {
        if (redis != null) {
            redis.close();
        }
        if (server != null) {
            server.destroy();
            server.waitFor(5, TimeUnit.SECONDS);
        }
    }

    static RedisPoolStateStore store() {
        return new RedisPoolStateStore(redis, "test:" + UUID.randomUUID());
    }

    @Test
    void idleIdsAreHandedOutOnceOldestFirst() {
        RedisPoolStateStore s = store();
        s.putIdle("p", "a");
        s.putIdle("p", "b");
        s.putIdle("p", "a");
        s.putIdle("q", "c");
        assertEquals(2, s.snapshotCounters("p").getIdleCount());
        assertEquals(List.of("a", "b"), s.snapshotIdleEntries("p").stream().map(e -> e.getSandboxId())
                .collect(java.util.stream.Collectors.toList()));
        assertEquals("a", s.tryTakeIdle("p"));
        s.removeIdle("p", "b");
        s.removeIdle("p", "b");
        assertNull(s.tryTakeIdle("p"));
        assertEquals("c", s.tryTakeIdle("q"));
        assertNull(s.getMaxIdle("p"));
        s.setMaxIdle("p", 3);
        assertEquals(3, s.getMaxIdle("p"));
        assertThrows(InvalidArgumentException.class, () -> s.putIdle("p", " "));
        assertThrows(InvalidArgumentException.class, () -> new RedisPoolStateStore(redis, ""));
    }

    @Test
    void concurrentTakersNeverShareAnId() throws Exception {
        RedisPoolStateStore s = store();
        for (int i = 0; i < 200; i++) {
            s.putIdle("p", "sb-" + i);
        }
        ConcurrentHashMap<String, Boolean> seen = new ConcurrentHashMap<>();
        ExecutorService ex = Executors.newFixedThreadPool(8);
        try {
            List<Future<Integer>> fs = new java.util.ArrayList<>();
            for (int t = 0; t < 8; t++) {
                fs.add(ex.submit(() -> {
                    int n = 0;
                    String id;
                    while ((id = s.tryTakeIdle("p")) != null) {
                        assertNull(seen.put(id, true), "handed out twice: " + id);
                        n++;
                    }
                    return n;
                }));
            }
            int total = 0;
            for (Future<Integer> f : fs) {
                total += f.get(30, TimeUnit.SECONDS);
            }
            assertEquals(200, total);
        } finally {
            ex.shutdownNow();
        }
    }

    @Test
    void expiryNearExpiryAndReap() throws Exception {
        RedisPoolStateStore s = store();
        s.setIdleEntryTtl("p", Duration.ofSeconds(10));
        s.putIdle("p", "short");
        s.setIdleEntryTtl("p", Duration.ofHours(1));
        s.putIdle("p", "long");
        TakeIdleResult r = s.tryTakeIdle("p", Duration.ofMinutes(1));
        assertEquals("long", r.getSandboxId());
        assertEquals(List.of("short"), r.getDiscardedAliveSandboxIds());
        s.putIdle("p", "x");
        assertEquals(List.of("x"), s.reapExpiredIdle("p", Instant.now(), Duration.ofHours(2)));
        assertEquals(0, s.snapshotCounters("p").getIdleCount());
        s.setIdleEntryTtl("p", Duration.ofMillis(1));
        s.putIdle("p", "gone");
        Thread.sleep(5);
        // The counter is the membership hash (as in the official stores): expired entries count until reaped.
        assertTrue(s.snapshotIdleEntries("p").get(0).getExpiresAt().isBefore(Instant.now()));
        assertEquals(List.of(), s.reapExpiredIdle("p", Instant.now(), Duration.ZERO));
        assertEquals(0, s.snapshotCounters("p").getIdleCount());
        assertNull(s.tryTakeIdle("p"));
    }

    @Test
    void primaryLockHasOneOwnerAndExpires() throws Exception {
        RedisPoolStateStore s = store();
        Duration ttl = Duration.ofSeconds(30);
        assertFalse(s.renewPrimaryLock("p", "a", ttl));
        assertTrue(s.tryAcquirePrimaryLock("p", "a", ttl));
        assertTrue(s.tryAcquirePrimaryLock("p", "a", ttl));
        assertFalse(s.tryAcquirePrimaryLock("p", "b", ttl));
        assertFalse(s.renewPrimaryLock("p", "b", ttl));
        assertTrue(s.renewPrimaryLock("p", "a", ttl));
        s.releasePrimaryLock("p", "b");
        assertFalse(s.tryAcquirePrimaryLock("p", "b", ttl));
        s.releasePrimaryLock("p", "a");
        assertTrue(s.tryAcquirePrimaryLock("p", "b", Duration.ofMillis(50)));
        Thread.sleep(120);
        assertTrue(s.tryAcquirePrimaryLock("p", "a", ttl), "an expired lock is free");
    }

    @Test
    void destroyFencingAndTombstone() throws Exception {
        RedisPoolStateStore s = store();
        s.putIdle("d", "a");
        s.setMaxIdle("d", 1);
        assertTrue(s.tryAcquirePrimaryLock("d", "leader", Duration.ofMinutes(1)));
        assertEquals(PoolDestroyState.ACTIVE, s.getDestroyState("d"));
        s.beginDestroy("d", "mgr");
        assertEquals(PoolDestroyState.DESTROYING, s.getDestroyState("d"));
        assertThrows(PoolDestroyedException.class, () -> s.putIdle("d", "b"));
        assertFalse(s.renewPrimaryLock("d", "leader", Duration.ofMinutes(1)));
        assertEquals("a", s.tryTakeIdle("d")); // the drain still takes
        s.clearPoolState("d");
        assertNull(s.getMaxIdle("d"));
        s.markDestroyed("d", "mgr", Duration.ofMillis(200));
        assertEquals(PoolDestroyState.DESTROYED, s.getDestroyState("d"));
        assertThrows(PoolDestroyedException.class, () -> s.beginDestroy("d", "mgr"));
        assertThrows(PoolDestroyedException.class, () -> s.setMaxIdle("d", 1));
        Thread.sleep(300);
        assertEquals(PoolDestroyState.ACTIVE, s.getDestroyState("d"));
        s.putIdle("d", "c");
        assertEquals("c", s.tryTakeIdle("d"));
    }

    @Test
    void theKeysAreTheOfficialLayout() {
        String prefix = "layout:" + UUID.randomUUID();
        RedisPoolStateStore s = new RedisPoolStateStore(redis, prefix);
        s.putIdle("my pool", "sb-1");
        s.setMaxIdle("my pool", 2);
        assertTrue(s.tryAcquirePrimaryLock("my pool", "me", Duration.ofSeconds(30)));
        // base64url("my pool") = bXkgcG9vbA, in braces: one cluster hash slot per pool.
        String base = prefix + ":{bXkgcG9vbA}:";
        assertEquals(List.of("sb-1"), redis.lrange(base + "idle:list", 0, -1));
        assertNotNull(redis.hget(base + "idle:expires", "sb-1"));
        assertEquals("2", redis.get(base + "maxIdle"));
        assertEquals("me", redis.get(base + "lock"));
    }

    @Test
    void anUnreachableRedisIsStoreUnavailable() {
        try (JedisPooled dead = new JedisPooled("127.0.0.1", 1)) {
            RedisPoolStateStore s = new RedisPoolStateStore(dead, "x");
            assertThrows(PoolStateStoreUnavailableException.class, () -> s.tryTakeIdle("p"));
            assertThrows(PoolStateStoreUnavailableException.class, () -> s.getMaxIdle("p"));
        }
    }

    @Test
    @EnabledIfEnvironmentVariable(named = "OPEN_SANDBOX_DOMAIN", matches = ".+")
    void twoPoolInstancesShareOneIdleBuffer() throws Exception {
        String prefix = "shared:" + UUID.randomUUID();
        PoolCreationSpec spec = PoolCreationSpec.builder().image("python:3.11").build();
        SandboxPool a = SandboxPool.builder().poolName("p").ownerId("a").maxIdle(1)
                .stateStore(new RedisPoolStateStore(redis, prefix)).creationSpec(spec)
                .reconcileInterval(Duration.ofMillis(100)).build();
        SandboxPool b = SandboxPool.builder().poolName("p").ownerId("b").maxIdle(1)
                .stateStore(new RedisPoolStateStore(redis, prefix)).creationSpec(spec)
                .reconcileInterval(Duration.ofMillis(100)).build();
        a.start();
        b.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (b.snapshot().getIdleCount() < 1) {
                assertTrue(System.nanoTime() < deadline, "no warm sandbox: " + b.snapshot());
                Thread.sleep(50);
            }
            String warm = b.snapshotIdleEntries().get(0).getSandboxId();
            Sandbox sb = b.acquire(Duration.ofMinutes(5), AcquirePolicy.FAIL_FAST);
            try {
                assertEquals(warm, sb.getId());
                assertEquals(0, sb.commands().run("true").getExitCode());
            } finally {
                sb.kill();
                sb.close();
            }
            // One shared target: a resize on one instance is what the primary follows.
            b.resize(0);
            assertEquals(0, a.snapshot().getMaxIdle());
        } finally {
            a.shutdown(false);
            b.shutdown(false);
            a.releaseAllIdle();
        }
    }
}
