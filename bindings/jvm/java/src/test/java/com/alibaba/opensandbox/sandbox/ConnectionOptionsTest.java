package com.alibaba.opensandbox.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxApiException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxReadyTimeoutException;
import com.alibaba.opensandbox.sandbox.transport.JitterMode;
import com.alibaba.opensandbox.sandbox.transport.RetryPolicy;
import com.alibaba.opensandbox.sandbox.transport.StatusCode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Deque;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * (1.1) ConnectionConfig's retry policy, endpoint cache, metrics and tracing flags, against
 * an in-test HTTP stub that answers scripted statuses and counts requests.
 */
class ConnectionOptionsTest {
    private static final String SANDBOX_JSON = "{\"id\":\"sbx-1\",\"status\":{\"state\":\"Running\"},"
            + "\"entrypoint\":[\"tail\"],\"createdAt\":\"2026-01-01T00:00:00Z\",\"metadata\":{}}";

    private HttpServer server;
    private final Deque<Integer> script = new ArrayDeque<>();
    private final AtomicInteger infoHits = new AtomicInteger();
    private final AtomicInteger endpointHits = new AtomicInteger();
    private final AtomicInteger killHits = new AtomicInteger();

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/v1/sandboxes/", this::handle);
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private void handle(HttpExchange ex) throws IOException {
        String path = ex.getRequestURI().getPath();
        String method = ex.getRequestMethod();
        int status;
        String body;
        if (path.contains("/endpoints/")) {
            endpointHits.incrementAndGet();
            status = 200;
            String port = path.substring(path.lastIndexOf('/') + 1);
            body = "{\"endpoint\":\"127.0.0.1:1/sbx/" + port + "\",\"headers\":{}}";
        } else if ("DELETE".equals(method)) {
            killHits.incrementAndGet();
            ex.sendResponseHeaders(204, -1);
            ex.close();
            return;
        } else {
            infoHits.incrementAndGet();
            Integer scripted;
            synchronized (script) {
                scripted = script.poll();
            }
            status = scripted != null ? scripted : 200;
            body = status == 200 ? SANDBOX_JSON : "{\"code\":\"X\",\"message\":\"scripted\"}";
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", "application/json");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    private ConnectionConfig.Builder config() {
        return ConnectionConfig.builder().domain("127.0.0.1:" + server.getAddress().getPort()).apiKey("k");
    }

    private static RetryPolicy fast(int retries) {
        return new RetryPolicy(retries, Duration.ofMillis(5), Duration.ofMillis(20));
    }

    private void script(Integer... statuses) {
        synchronized (script) {
            script.clear();
            Collections.addAll(script, statuses);
        }
        infoHits.set(0);
    }

    @Test
    void defaultsAreTheOfficialOnes() {
        ConnectionConfig c = ConnectionConfig.builder().build();
        RetryPolicy p = c.getRetryPolicy();
        assertEquals(3, p.getMaxRetries());
        assertEquals(Duration.ofMillis(500), p.getInitialBackoff());
        assertEquals(Duration.ofSeconds(30), p.getMaxBackoff());
        assertEquals(2.0, p.getBackoffMultiplier());
        assertEquals(JitterMode.DECORRELATED, p.getJitter());
        assertEquals(Set.of(429, 502, 503), p.getRetryableStatusCodesIdempotent());
        assertTrue(p.getRetryableStatusCodesNonIdempotent().isEmpty());
        assertTrue(p.wrapsTransport());
        assertFalse(RetryPolicy.disabled().wrapsTransport());
        assertEquals(Duration.ofSeconds(600), c.getEndpointCacheTtl());
        assertEquals(1024, c.getEndpointCacheSize());
        assertFalse(c.getEndpointCacheDisabled());
        assertFalse(c.getDisableMetrics());
        assertFalse(c.getEnableTracing());
        assertEquals(System.getenv(ConnectionConfig.ENV_DISABLE_METRICS) != null
                && System.getenv(ConnectionConfig.ENV_DISABLE_METRICS).trim().equals("1"), c.isMetricsDisabled());
        ConnectionConfig d = ConnectionConfig.builder().disableMetrics().enableTracing().build();
        assertTrue(d.getDisableMetrics() && d.isMetricsDisabled() && d.getEnableTracing());
        assertThrows(IllegalArgumentException.class, () -> new RetryPolicy(-1));
        assertThrows(IllegalArgumentException.class,
                () -> new RetryPolicy(1, Duration.ZERO, Duration.ZERO, 0.5));
    }

    @Test
    void knobsTheCoreCannotHonourAreRefused() {
        RetryPolicy[] refused = {
            new RetryPolicy(3, Duration.ofMillis(500), Duration.ofSeconds(30), 2.0, JitterMode.FULL,
                    RetryPolicy.DEFAULT_IDEMPOTENT_STATUS, Set.of(StatusCode.SERVICE_UNAVAILABLE)),
            new RetryPolicy(3, Duration.ofMillis(500), Duration.ofSeconds(30), 2.0, JitterMode.FULL,
                    RetryPolicy.DEFAULT_IDEMPOTENT_STATUS, Set.of(), Duration.ofSeconds(1)),
            new RetryPolicy(3, Duration.ofMillis(500), Duration.ofSeconds(30), 2.0, JitterMode.FULL,
                    RetryPolicy.DEFAULT_IDEMPOTENT_STATUS, Set.of(), null, Duration.ofSeconds(5)),
            new RetryPolicy(3, Duration.ofMillis(500), Duration.ofSeconds(30), 2.0, JitterMode.FULL,
                    RetryPolicy.DEFAULT_IDEMPOTENT_STATUS, Set.of(), null, null, e -> { }),
        };
        for (RetryPolicy p : refused) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> ConnectionConfig.builder().retryPolicy(p));
            assertTrue(e.getMessage().contains("not supported"), e.getMessage());
        }
    }

    @Test
    void retryableStatusesAreRetriedByTheCore() {
        try (SandboxManager m = SandboxManager.builder().connectionConfig(config().retryPolicy(fast(3)).build())
                .build()) {
            script(503, 502);
            assertEquals("sbx-1", m.getSandboxInfo("sbx-1").getId());
            assertEquals(3, infoHits.get());

            script(429, 429, 429, 429, 429);
            assertThrows(SandboxApiException.class, () -> m.getSandboxInfo("sbx-1"));
            assertEquals(4, infoHits.get(), "initial attempt + maxRetries");

            // 504 is outside the official default set (the core's own default has it).
            script(504);
            assertThrows(SandboxApiException.class, () -> m.getSandboxInfo("sbx-1"));
            assertEquals(1, infoHits.get());
        }
    }

    @Test
    void customStatusSetsAndDisabledPolicies() {
        RetryPolicy only504 = new RetryPolicy(2, Duration.ofMillis(5), Duration.ofMillis(20), 2.0, JitterMode.NONE,
                Set.of(StatusCode.GATEWAY_TIMEOUT));
        try (SandboxManager m = SandboxManager.builder().connectionConfig(config().retryPolicy(only504).build())
                .build()) {
            script(504, 504);
            assertEquals("sbx-1", m.getSandboxInfo("sbx-1").getId());
            assertEquals(3, infoHits.get());
            script(503);
            assertThrows(SandboxApiException.class, () -> m.getSandboxInfo("sbx-1"));
            assertEquals(1, infoHits.get());
        }
        try (SandboxManager m = SandboxManager.builder()
                .connectionConfig(config().retryPolicy(RetryPolicy.disabled()).build()).build()) {
            script(503);
            SandboxApiException e = assertThrows(SandboxApiException.class, () -> m.getSandboxInfo("sbx-1"));
            assertEquals(503, e.getStatusCode());
            assertEquals(1, infoHits.get());
        }
    }

    @Test
    void endpointsAreCachedPerConfigAndDroppedOnKill() {
        ConnectionConfig cfg = config().build();
        Sandbox first = Sandbox.connector().sandboxId("sbx-1").connectionConfig(cfg).skipHealthCheck().connect();
        for (int i = 0; i < 3; i++) {
            Sandbox again = Sandbox.connector().sandboxId("sbx-1").connectionConfig(cfg).skipHealthCheck().connect();
            again.close();
        }
        try (SandboxManager m = SandboxManager.builder().connectionConfig(cfg).build()) {
            assertEquals("127.0.0.1:1/sbx/44772", m.getEndpoint("sbx-1", 44772).getEndpoint());
            assertEquals(1, endpointHits.get(), "one lookup for four handles and the manager");
            first.getEndpoint(8080);
            first.getEndpoint(8080);
            assertEquals(2, endpointHits.get(), "another port is another entry");
            first.kill();
            assertEquals(1, killHits.get());
            m.getEndpoint("sbx-1", 44772);
            assertEquals(3, endpointHits.get(), "kill drops the sandbox's entries");
        }
        first.close();

        ConnectionConfig off = config().endpointCacheDisabled(true).build();
        endpointHits.set(0);
        for (int i = 0; i < 3; i++) {
            Sandbox.connector().sandboxId("sbx-1").connectionConfig(off).skipHealthCheck().connect().close();
        }
        assertEquals(3, endpointHits.get());

        ConnectionConfig shortTtl = config().endpointCacheTtl(Duration.ofMillis(100)).build();
        endpointHits.set(0);
        try (SandboxManager m = SandboxManager.builder().connectionConfig(shortTtl).build()) {
            m.getEndpoint("sbx-1", 44772);
            m.getEndpoint("sbx-1", 44772);
            assertEquals(1, endpointHits.get());
            sleep(250);
            m.getEndpoint("sbx-1", 44772);
            assertEquals(2, endpointHits.get(), "expired after the TTL");
        }
    }

    @Test
    void httpClientProviderFailsLoudlyAndPingIsFalseWithoutExecd() {
        ConnectionConfig cfg = config().retryPolicy(RetryPolicy.disabled()).requestTimeout(Duration.ofSeconds(2))
                .build();
        try (Sandbox sb = Sandbox.connector().sandboxId("sbx-1").connectionConfig(cfg).skipHealthCheck().connect()) {
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    sb::httpClientProvider);
            assertTrue(e.getMessage().contains("OkHttp"));
            // The stub's endpoint (127.0.0.1:1) has no execd behind it.
            assertFalse(sb.ping());
            assertThrows(InvalidArgumentException.class, () -> sb.checkReady(Duration.ofSeconds(1), Duration.ZERO));
            SandboxException timeout = assertThrows(SandboxException.class,
                    () -> sb.checkReady(Duration.ofMillis(300), Duration.ofMillis(50)));
            assertInstanceOf(SandboxReadyTimeoutException.class, timeout);
            assertEquals("ready_timeout", timeout.getKind());
        }
    }

    @Test
    void nullRetryPolicyIsRefused() {
        assertThrows(InvalidArgumentException.class, () -> ConnectionConfig.builder().retryPolicy(null));
        assertInstanceOf(RetryPolicy.class, ConnectionConfig.builder().build().getRetryPolicy());
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
