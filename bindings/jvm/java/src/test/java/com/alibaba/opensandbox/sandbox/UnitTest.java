package com.alibaba.opensandbox.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxApiException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxInternalException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxReadyTimeoutException;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.RunCommandRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxInfo;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import com.alibaba.opensandbox.sandbox.internal.NativeLoader;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Tests that need no server. */
class UnitTest {
    @Test
    void jsonRoundTripKeepsTypesAndEscapes() {
        String text = "{\"a\":\"x\\\"y\\n\\u00e9\",\"n\":12,\"d\":1.5,\"b\":true,\"z\":null,\"l\":[1,\"2\"]}";
        Map<?, ?> m = (Map<?, ?>) Json.parse(text);
        assertEquals("x\"y\né", m.get("a"));
        assertEquals(12L, m.get("n"));
        assertEquals(1.5, m.get("d"));
        assertEquals(true, m.get("b"));
        assertTrue(m.containsKey("z"));
        assertNull(m.get("z"));
        assertEquals(List.of(1L, "2"), m.get("l"));
        assertEquals(m, Json.parse(Json.write(m)));
        assertThrows(IllegalArgumentException.class, () -> Json.parse("{\"a\":1} x"));
    }

    @Test
    void nativeErrorsBecomeTheMatchingExceptions() {
        SandboxException e = NativeBridge.toException(
                "{\"kind\":\"not_found\",\"status\":404,\"code\":\"SANDBOX::NOT_FOUND\",\"request_id\":\"r1\",\"message\":\"gone\"}", null);
        SandboxApiException api = assertInstanceOf(SandboxApiException.class, e);
        assertEquals(404, api.getStatusCode());
        assertEquals("SANDBOX::NOT_FOUND", api.getError().getCode());
        assertEquals("r1", api.getRequestId());
        assertEquals("gone", api.getMessage());
        assertEquals("not_found", api.getKind());

        assertInstanceOf(SandboxReadyTimeoutException.class,
                NativeBridge.toException("{\"kind\":\"ready_timeout\",\"message\":\"slow\"}", null));
        assertInstanceOf(InvalidArgumentException.class,
                NativeBridge.toException("{\"kind\":\"invalid_argument\",\"message\":\"bad\"}", null));
        SandboxException conn = NativeBridge.toException("{\"kind\":\"connection\",\"message\":\"refused\"}", null);
        assertInstanceOf(SandboxInternalException.class, conn);
        assertEquals("connection", conn.getKind());
        assertInstanceOf(SandboxInternalException.class, NativeBridge.toException("not json", null));
    }

    @Test
    void exceptionKindFollowsTheClassWhenBuiltByUsers() {
        assertEquals("invalid_argument", new InvalidArgumentException("x").getKind());
        assertEquals("unauthorized", new SandboxApiException("x", 401).getKind());
        assertEquals("api", new SandboxApiException("x", 409).getKind());
    }

    @Test
    void loaderReportsThePlatformDirectory() {
        assertEquals("linux-x86_64", NativeLoader.platform().startsWith("linux") ? "linux-x86_64" : NativeLoader.platform());
        NativeLoader.load(); // idempotent
        NativeLoader.load();
    }

    @Test
    void configDefaultsAndBaseUrl() {
        ConnectionConfig c = ConnectionConfig.builder().domain("https://example.com:9000/").apiKey(null).build();
        assertEquals("https://example.com:9000/v1", c.getBaseUrl());
        assertNull(c.getApiKey());
        assertEquals(Duration.ofSeconds(30), c.getRequestTimeout());
        ConnectionConfig d = ConnectionConfig.builder().domain("h:1").build();
        assertEquals("http://h:1/v1", d.getBaseUrl());
    }

    @Test
    void invalidArgumentsFailBeforeAnyRequest() {
        assertThrows(InvalidArgumentException.class, () -> RunCommandRequest.builder().command("  ").build());
        // Neither image nor snapshot: rejected locally.
        assertThrows(InvalidArgumentException.class,
                () -> Sandbox.builder().connectionConfig(ConnectionConfig.builder().domain("127.0.0.1:9").build()).build());
        assertThrows(InvalidArgumentException.class, () -> Sandbox.connector().connect());
    }

    @Test
    void modelsParseTheNativeForm() {
        SandboxInfo info = SandboxInfo.fromJson(Json.parse("{\"id\":\"s1\",\"status\":{\"state\":\"Running\"},"
                + "\"entrypoint\":[\"tail\"],\"expires_at\":\"2026-11-30T10:00:00Z\",\"created_at\":null,"
                + "\"image\":{\"uri\":\"python:3.11\"},\"snapshot_id\":null,\"metadata\":{\"k\":\"v\"}}"));
        assertEquals("s1", info.getId());
        assertEquals("Running", info.getStatus().getState());
        assertEquals("python:3.11", info.getImage().getImage());
        assertEquals(2026, info.getExpiresAt().getYear());
        assertNull(info.getCreatedAt());
        assertEquals(Map.of("k", "v"), info.getMetadata());
    }

    @Test
    void unreachableConfigReleasesItsNativeHandle() throws Exception {
        long h = ConnectionConfig.builder().domain("example.invalid:1").build().nativeHandle();
        Map<?, ?> info = (Map<?, ?>) NativeBridge.invoke("config.info", Json.obj("connection", h));
        assertEquals("example.invalid:1", info.get("domain"));
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            System.gc();
            try {
                NativeBridge.invoke("config.info", Json.obj("connection", h));
            } catch (InvalidArgumentException e) {
                assertTrue(e.getMessage().contains("no handle " + h), e.getMessage());
                return;
            }
            assertTrue(System.nanoTime() < deadline, "config handle " + h + " was never released");
            Thread.sleep(20);
        }
    }

    @Test
    void unknownKeysAreRejectedByTheOpLayer() {
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                () -> NativeBridge.invoke("config.new", Json.obj("domian", "x")));
        assertTrue(e.getMessage().contains("config.new") && e.getMessage().contains("domian"), e.getMessage());
    }

    @Test
    void everyOpTheJavaSourcesCallIsInTheManifest() throws Exception {
        Map<?, ?> manifest = (Map<?, ?>) NativeBridge.invoke("manifest", Json.obj());
        java.util.Set<String> known = new java.util.HashSet<>();
        for (Object op : (List<?>) manifest.get("ops")) {
            known.add(String.valueOf(((Map<?, ?>) op).get("name")));
        }
        java.util.regex.Pattern call = java.util.regex.Pattern.compile(
                "(?:invoke|invokeAsync|START_OPS|Map\\.of)\\(\\s*\"([a-z_]+(?:\\.[a-z_]+)?)\"");
        java.util.regex.Pattern literal = java.util.regex.Pattern.compile("\"([a-z]+\\.[a-z_]+)\"");
        List<java.nio.file.Path> sources;
        try (java.util.stream.Stream<java.nio.file.Path> walk = java.nio.file.Files.walk(java.nio.file.Paths.get("src/main/java"))) {
            sources = walk.filter(p -> p.toString().endsWith(".java")).collect(java.util.stream.Collectors.toList());
        }
        int seen = 0;
        for (java.nio.file.Path p : sources) {
            String text = java.nio.file.Files.readString(p);
            java.util.regex.Matcher m = call.matcher(text);
            while (m.find()) {
                seen++;
                assertTrue(known.contains(m.group(1)), p + " calls unknown op " + m.group(1));
            }
            if (p.endsWith("NativeBridge.java")) {
                java.util.regex.Matcher l = literal.matcher(text);
                while (l.find()) {
                    if (l.group(1).matches("(commands|code|execution|isolation)\\..*")) {
                        assertTrue(known.contains(l.group(1)), "NativeBridge uses unknown op " + l.group(1));
                    }
                }
            }
        }
        assertTrue(seen > 50, "only " + seen + " op calls found");
    }
}
