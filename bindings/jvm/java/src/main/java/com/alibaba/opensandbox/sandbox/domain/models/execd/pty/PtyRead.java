// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.pty;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;

/** One read of a {@link com.alibaba.opensandbox.sandbox.domain.services.PtyConnection}. */
public final class PtyRead {
    private final byte[] data;
    private final Long offset;
    private final long nextOffset;
    private final String channel;
    private final Integer exitCode;
    private final boolean closed;
    private final Integer closeCode;
    private final boolean timedOut;
    private final boolean done;

    private PtyRead(Map<?, ?> m) {
        this.data = Base64.getDecoder().decode(Json.str(m.get("data_b64")));
        this.offset = Json.long_(m.get("offset"));
        Long next = Json.long_(m.get("next_offset"));
        this.nextOffset = next == null ? 0 : next;
        this.channel = Json.str(m.get("channel"));
        this.exitCode = Json.integer(m.get("exit_code"));
        this.closed = Boolean.TRUE.equals(Json.boolean_(m.get("closed")));
        this.closeCode = Json.integer(m.get("close_code"));
        this.timedOut = Boolean.TRUE.equals(Json.boolean_(m.get("timed_out")));
        this.done = Boolean.TRUE.equals(Json.boolean_(m.get("done")));
    }

    /** Internal: from the native JSON form. */
    public static PtyRead fromJson(Object json) {
        return new PtyRead((Map<?, ?>) json);
    }

    public byte[] getData() {
        return data.clone();
    }

    /** The bytes as UTF-8 (invalid sequences replaced). */
    public String getText() {
        return new String(data, StandardCharsets.UTF_8);
    }

    /** Absolute offset of the first byte (null when there is none). */
    public Long getOffset() {
        return offset;
    }

    public long getNextOffset() {
        return nextOffset;
    }

    /** {@code stdout}, {@code stderr} (pipe mode) or {@code replay}. */
    public String getChannel() {
        return channel;
    }

    public Integer getExitCode() {
        return exitCode;
    }

    public boolean isClosed() {
        return closed;
    }

    /** 1000 after an exit, 4001 when another client took the session over. */
    public Integer getCloseCode() {
        return closeCode;
    }

    public boolean isTimedOut() {
        return timedOut;
    }

    public boolean isDone() {
        return done;
    }
}
