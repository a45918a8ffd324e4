// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.services;

import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.models.execd.pty.LogChunk;
import com.alibaba.opensandbox.sandbox.domain.models.execd.pty.PtyMode;
import com.alibaba.opensandbox.sandbox.domain.models.execd.pty.PtySessionStatus;
import com.alibaba.opensandbox.sandbox.domain.models.execd.pty.PtyWebSocket;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxEndpoint;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Deque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * PTY sessions of one sandbox ({@code sandbox.pty()}): a long-lived bash over the execd
 * WebSocket with a 1 MiB replay buffer addressed by byte offsets. {@code createSession},
 * {@code getSession}, {@code deleteSession} are the official Kotlin SDK's names;
 * {@link #attach} drives the WebSocket for you; {@link #webSocket} (official 1.1) gives the
 * URL and handshake headers for your own WebSocket client.
 */
public final class Pty {
    /** execd's port inside the sandbox. */
    public static final int DEFAULT_EXECD_PORT = 44772;

    private final long handle;
    private final ConnectionConfig config;
    private final int execdPort;

    /** Internal: use {@code sandbox.pty()}. */
    public Pty(long handle) {
        this(handle, null, DEFAULT_EXECD_PORT);
    }

    /** Internal: use {@code sandbox.pty()}. */
    public Pty(long handle, ConnectionConfig config, int execdPort) {
        this.handle = handle;
        this.config = config;
        this.execdPort = execdPort;
    }

    /** Creates a session (its shell starts on the first attach); returns its id. */
    public String createSession(String cwd, String command) {
        Map<?, ?> r = (Map<?, ?>) NativeBridge.invoke("pty.create",
                Json.obj("sandbox", handle, "cwd", cwd, "command", command));
        return Json.str(r.get("session_id"));
    }

    public String createSession() {
        return createSession(null, null);
    }

    public PtySessionStatus getSession(String sessionId) {
        return PtySessionStatus.fromJson(NativeBridge.invoke("pty.get",
                Json.obj("sandbox", handle, "session_id", sessionId)));
    }

    /** Kills the session's shell and forgets the session. */
    public void deleteSession(String sessionId) {
        NativeBridge.invoke("pty.delete", Json.obj("sandbox", handle, "session_id", sessionId));
    }

    /**
     * Attaches over the WebSocket. {@code since} (null: 0) replays what is still buffered
     * from that offset; {@code pipe} counts only if this attach starts the shell; a
     * session held by another client throws {@code SandboxApiException} (409
     * {@code ALREADY_CONNECTED}) unless {@code takeover}.
     */
    public PtyConnection attach(String sessionId, Long since, boolean pipe, boolean takeover) {
        Map<?, ?> r = (Map<?, ?>) NativeBridge.invoke("pty.attach", Json.obj("sandbox", handle,
                "session_id", sessionId, "since", since, "mode", pipe ? "pipe" : "pty", "takeover", takeover));
        Long h = Json.long_(r.get("handle"));
        Long from = Json.long_(r.get("since"));
        return new PtyConnection(h == null ? 0 : h, sessionId, Json.str(r.get("mode")), from == null ? 0 : from);
    }

    public PtyConnection attach(String sessionId) {
        return attach(sessionId, null, false, false);
    }

    /**
     * (1.1, official) The WebSocket target of a session for your own client: execd's
     * {@code /pty/{id}/ws} on the sandbox's resolved execd endpoint ({@code ws://}, or
     * {@code wss://} for https), with {@code pty=0} for {@link PtyMode#PIPE}, {@code since}
     * when given and {@code takeover=1}; the headers (connection headers, endpoint
     * routing/auth headers, {@code User-Agent}) must be sent on the handshake. Resolves the
     * endpoint (one lifecycle request unless cached); nothing is opened.
     */
    public PtyWebSocket webSocket(String sessionId, PtyMode mode, Long since, boolean takeover) {
        if (sessionId == null || sessionId.isEmpty()) {
            throw new InvalidArgumentException("sessionId is required");
        }
        if (since != null && since < 0) {
            throw new InvalidArgumentException("since must be >= 0, got " + since);
        }
        SandboxEndpoint ep = SandboxEndpoint.fromJson(NativeBridge.invoke("sandbox.get_endpoint",
                Json.obj("sandbox", handle, "port", execdPort)));
        String base = ep.getEndpoint().trim();
        while (base.endsWith("/")) {
            base = base.substring(0, base.length() - 1);
        }
        String lower = base.toLowerCase(java.util.Locale.ROOT);
        if (lower.startsWith("https://")) {
            base = "wss://" + base.substring(8);
        } else if (lower.startsWith("http://")) {
            base = "ws://" + base.substring(7);
        } else {
            String api = config != null ? config.getBaseUrl() : "http://";
            base = (api.startsWith("https://") ? "wss://" : "ws://") + base;
        }
        StringBuilder url = new StringBuilder(base).append("/pty/")
                .append(URLEncoder.encode(sessionId, StandardCharsets.UTF_8).replace("+", "%20")).append("/ws");
        List<String> query = new ArrayList<>();
        if (mode == PtyMode.PIPE) {
            query.add("pty=0");
        }
        if (since != null) {
            query.add("since=" + since);
        }
        if (takeover) {
            query.add("takeover=1");
        }
        if (!query.isEmpty()) {
            url.append('?').append(String.join("&", query));
        }
        Map<String, String> headers = new LinkedHashMap<>();
        if (config != null) {
            headers.putAll(config.getHeaders());
        }
        if (ep.getHeaders() != null) {
            headers.putAll(ep.getHeaders());
        }
        if (config != null) {
            headers.put("User-Agent", config.getUserAgent());
        }
        return new PtyWebSocket(url.toString(), headers);
    }

    /** {@link #webSocket(String, PtyMode, Long, boolean)} without replay or takeover. */
    public PtyWebSocket webSocket(String sessionId, PtyMode mode) {
        return webSocket(sessionId, mode, null, false);
    }

    /** {@link #webSocket(String, PtyMode, Long, boolean)} in PTY mode, without replay or takeover. */
    public PtyWebSocket webSocket(String sessionId) {
        return webSocket(sessionId, PtyMode.PTY, null, false);
    }

    /**
     * A background command's output as it is written, from any process that knows its
     * id: chunks each starting where the previous ended; the iterator ends when the
     * command finished and its log is drained. Close it to stop early.
     */
    public LogFollower followLogs(String executionId, long cursor) {
        Map<?, ?> r = (Map<?, ?>) NativeBridge.invoke("commands.follow_logs",
                Json.obj("sandbox", handle, "id", executionId, "cursor", cursor));
        Long h = Json.long_(r.get("handle"));
        return new LogFollower(h == null ? 0 : h);
    }

    /** The pulled log stream of {@link #followLogs}. */
    public static final class LogFollower implements Iterator<LogChunk>, AutoCloseable {
        private long handle;
        private final Deque<Object> pending = new ArrayDeque<>();
        private boolean done;

        LogFollower(long handle) {
            this.handle = handle;
        }

        @Override
        public boolean hasNext() {
            while (pending.isEmpty() && !done) {
                Map<?, ?> batch = (Map<?, ?>) NativeBridge.invoke("execution.next_batch", Json.obj("handle", handle));
                List<?> events = (List<?>) batch.get("events");
                for (Object ev : events) {
                    Map<?, ?> m = (Map<?, ?>) ev;
                    if ("end".equals(m.get("type"))) {
                        done = true;
                        if (!Boolean.TRUE.equals(m.get("ok"))) {
                            close();
                            throw NativeBridge.toException(Json.write(m.get("error")), null);
                        }
                    } else if ("log".equals(m.get("type"))) {
                        pending.add(m);
                    }
                }
                if (Boolean.TRUE.equals(batch.get("done"))) {
                    done = true;
                }
            }
            if (pending.isEmpty()) {
                close();
                return false;
            }
            return true;
        }

        @Override
        public LogChunk next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            Map<?, ?> m = (Map<?, ?>) pending.poll();
            Long offset = Json.long_(m.get("offset"));
            return new LogChunk(offset == null ? 0 : offset, Base64.getDecoder().decode(Json.str(m.get("data_b64"))));
        }

        /** Stops following (releases the stream). */
        @Override
        public void close() {
            if (handle != 0) {
                NativeBridge.release(handle);
                handle = 0;
            }
            done = true;
        }
    }
}
