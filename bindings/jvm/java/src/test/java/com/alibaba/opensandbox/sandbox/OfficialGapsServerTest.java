package com.alibaba.opensandbox.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxReadyTimeoutException;
import com.alibaba.opensandbox.sandbox.domain.models.execd.pty.PtyMode;
import com.alibaba.opensandbox.sandbox.domain.models.execd.pty.PtyWebSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * (1.1) {@code pty().webSocket(...)} (the URL and headers drive java.net.http's WebSocket) and
 * {@code Sandbox.connector()/resumer().execdPort(port)} against the reference server.
 */
@EnabledIfEnvironmentVariable(named = "OPEN_SANDBOX_DOMAIN", matches = ".+")
class OfficialGapsServerTest {
    static ConnectionConfig config;
    static Sandbox sb;

    @BeforeAll
    static void create() {
        config = ConnectionConfig.builder().headers(h -> h.put("X-Jvm-Test", "pty-ws")).build();
        sb = Sandbox.builder().image("python:3.11").connectionConfig(config).metadata("suite", "jvm-ptyws").build();
    }

    @AfterAll
    static void kill() {
        if (sb != null) {
            sb.kill();
            sb.close();
        }
    }

    /** Collects stdout (channel 0x01/0x03 frames) as text and the JSON text frames. */
    static final class Collector implements WebSocket.Listener {
        final StringBuffer out = new StringBuffer();
        final StringBuffer text = new StringBuffer();
        final CompletableFuture<Void> connected = new CompletableFuture<>();

        @Override
        public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
            byte channel = data.get();
            if (channel == 0x03) {
                data.position(data.position() + 8);
            }
            byte[] b = new byte[data.remaining()];
            data.get(b);
            out.append(new String(b, StandardCharsets.UTF_8));
            ws.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            text.append(data);
            if (text.toString().contains("\"connected\"")) {
                connected.complete(null);
            }
            ws.request(1);
            return null;
        }

        boolean await(String needle, Duration timeout) throws InterruptedException {
            long end = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < end) {
                if (out.toString().contains(needle)) {
                    return true;
                }
                Thread.sleep(50);
            }
            return false;
        }
    }

    private static WebSocket open(PtyWebSocket target, Collector c) throws Exception {
        WebSocket.Builder b = HttpClient.newHttpClient().newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10));
        // java.net.http sets these itself and refuses them as extra headers.
        target.getHeaders().forEach((k, v) -> {
            if (!k.equalsIgnoreCase("User-Agent")) {
                b.header(k, v);
            }
        });
        WebSocket ws = b.buildAsync(URI.create(target.getUrl()), c).get(20, TimeUnit.SECONDS);
        c.connected.get(20, TimeUnit.SECONDS);
        return ws;
    }

    private static void type(WebSocket ws, String s) throws Exception {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        ByteBuffer buf = ByteBuffer.allocate(b.length + 1).put((byte) 0).put(b);
        buf.flip();
        ws.sendBinary(buf, true).get(10, TimeUnit.SECONDS);
    }

    @Test
    void urlAndHeadersFollowTheOfficialShape() {
        String id = sb.pty().createSession();
        try {
            PtyWebSocket plain = sb.pty().webSocket(id);
            assertTrue(plain.getUrl().matches("wss?://.+/pty/" + id + "/ws"), plain.getUrl());
            assertEquals("pty-ws", plain.getHeaders().get("X-Jvm-Test"));
            assertEquals(config.getUserAgent(), plain.getHeaders().get("User-Agent"));
            PtyWebSocket all = sb.pty().webSocket(id, PtyMode.PIPE, 7L, true);
            assertTrue(all.getUrl().endsWith("/pty/" + id + "/ws?pty=0&since=7&takeover=1"), all.getUrl());
            assertTrue(sb.pty().webSocket(id, PtyMode.PTY).getUrl().endsWith("/ws"));
            assertThrows(InvalidArgumentException.class, () -> sb.pty().webSocket(""));
            assertThrows(InvalidArgumentException.class, () -> sb.pty().webSocket(id, PtyMode.PTY, -1L, false));
        } finally {
            sb.pty().deleteSession(id);
        }
    }

    @Test
    void ownClientGetsAShellAnswerAndReplaysWithSince() throws Exception {
        String id = sb.pty().createSession();
        try {
            Collector c = new Collector();
            WebSocket ws = open(sb.pty().webSocket(id, PtyMode.PIPE), c);
            assertTrue(c.text.toString().contains("\"pipe\""), c.text.toString());
            type(ws, "echo ws-$((6*7))\n");
            assertTrue(c.await("ws-42", Duration.ofSeconds(20)), "shell answered: " + c.out);
            ws.sendClose(WebSocket.NORMAL_CLOSURE, "bye").get(10, TimeUnit.SECONDS);
            Thread.sleep(300);

            long end = sb.pty().getSession(id).getOutputOffset();
            assertTrue(end >= 6, "offset " + end);
            // Reattach from 0: the replay frame carries what was printed.
            Collector again = new Collector();
            WebSocket ws2 = open(sb.pty().webSocket(id, PtyMode.PIPE, 0L, false), again);
            assertTrue(again.await("ws-42", Duration.ofSeconds(10)), "replayed: " + again.out);
            type(ws2, "echo again-$((2+3))\n");
            assertTrue(again.await("again-5", Duration.ofSeconds(20)), "shell answered: " + again.out);
            ws2.sendClose(WebSocket.NORMAL_CLOSURE, "bye").get(10, TimeUnit.SECONDS);
        } finally {
            sb.pty().deleteSession(id);
        }
    }

    @Test
    void execdPortRoutesExecdCallsToThatPort() {
        try (Sandbox same = Sandbox.connector().sandboxId(sb.getId()).connectionConfig(config).execdPort(44772)
                .connect()) {
            assertEquals("ok", same.commands().run("echo ok").getLogs().getStdout().get(0).getText().trim());
        }
        // The reference server serves execd on 44772 only: another port is resolved and
        // used (the PTY URL and ping go there), lifecycle calls still work by id.
        try (Sandbox other = Sandbox.connector().sandboxId(sb.getId()).connectionConfig(config).execdPort(9999)
                .skipHealthCheck().connect()) {
            assertEquals(sb.getId(), other.getId());
            assertTrue(other.pty().webSocket("abc").getUrl().contains("/9999/pty/abc/ws"),
                    other.pty().webSocket("abc").getUrl());
            assertFalse(other.ping());
            assertEquals(sb.getId(), other.getInfo().getId());
        }
        assertThrows(SandboxReadyTimeoutException.class, () -> Sandbox.connector().sandboxId(sb.getId())
                .connectionConfig(config).execdPort(9999).connectTimeout(Duration.ofMillis(500)).connect());
        assertThrows(InvalidArgumentException.class, () -> Sandbox.connector().execdPort(0));
        assertThrows(InvalidArgumentException.class, () -> Sandbox.resumer().execdPort(70000));
    }
}
