package com.alibaba.opensandbox.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxReadyTimeoutException;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.Execution;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.RunCommandRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.OutputMessage;
import com.alibaba.opensandbox.sandbox.transport.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/** (1.1) checkReady, ping, argv runs and the connection options against the reference server. */
@EnabledIfEnvironmentVariable(named = "OPEN_SANDBOX_DOMAIN", matches = ".+")
class SandboxExtrasServerTest {
    static ConnectionConfig config;
    static Sandbox sb;

    @BeforeAll
    static void create() {
        config = ConnectionConfig.builder().retryPolicy(new RetryPolicy(2, Duration.ofMillis(50)))
                .endpointCacheTtl(Duration.ofMinutes(5)).endpointCacheSize(16).disableMetrics().build();
        sb = Sandbox.builder().image("python:3.11").connectionConfig(config).metadata("suite", "jvm-extras").build();
    }

    @AfterAll
    static void kill() {
        if (sb != null) {
            sb.kill();
            sb.close();
        }
    }

    private static String stdout(Execution e) {
        return e.getLogs().getStdout().stream().map(OutputMessage::getText).collect(Collectors.joining());
    }

    @Test
    void pingAndCheckReadyOnALiveSandbox() {
        assertTrue(sb.ping());
        sb.checkReady(Duration.ofSeconds(10), Duration.ofMillis(100));
        assertThrows(InvalidArgumentException.class, () -> sb.checkReady(Duration.ofSeconds(1), Duration.ZERO));
    }

    @Test
    void checkReadyUsesTheCustomHealthCheck() {
        AtomicInteger calls = new AtomicInteger();
        try (Sandbox other = Sandbox.connector().sandboxId(sb.getId()).connectionConfig(config)
                .healthCheck(s -> calls.incrementAndGet() >= 3).healthCheckPollingInterval(Duration.ofMillis(20))
                .connect()) {
            assertEquals(3, calls.get(), "connect polled the custom check until it passed");
            other.checkReady(Duration.ofSeconds(5), Duration.ofMillis(20));
            assertEquals(4, calls.get());
        }
        try (Sandbox never = Sandbox.connector().sandboxId(sb.getId()).connectionConfig(config)
                .healthCheck(s -> false).skipHealthCheck().connect()) {
            assertTrue(never.ping(), "ping is execd's answer, not the custom check");
            assertThrows(SandboxReadyTimeoutException.class,
                    () -> never.checkReady(Duration.ofMillis(200), Duration.ofMillis(50)));
        }
    }

    @Test
    void argvRunsWithoutAShell() {
        Execution e = sb.commands().run(RunCommandRequest.builder()
                .argv(List.of("printf", "%s|%s", "a b", "$HOME")).build());
        assertEquals("a b|$HOME", stdout(e));
        assertThrows(InvalidArgumentException.class, () -> RunCommandRequest.builder().argv(List.of()).build());
        assertThrows(InvalidArgumentException.class,
                () -> RunCommandRequest.builder().command("true").argv(List.of("true")).build());
        assertThrows(InvalidArgumentException.class, () -> RunCommandRequest.builder().build());
    }

    @Test
    void aKilledSandboxIsNoLongerServedFromTheEndpointCache() {
        Sandbox victim = Sandbox.builder().image("python:3.11").connectionConfig(config).build();
        String id = victim.getId();
        try (Sandbox again = Sandbox.connector().sandboxId(id).connectionConfig(config).connect()) {
            assertTrue(again.ping());
        }
        victim.kill();
        victim.close();
        // The kill dropped the cached endpoint: connecting again asks the server, which
        // no longer knows the sandbox (an error, not a stale handle).
        assertThrows(com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException.class,
                () -> Sandbox.connector().sandboxId(id).connectionConfig(config)
                        .connectTimeout(Duration.ofSeconds(2)).connect());
        assertFalse(sb.getId().equals(id));
    }
}
