// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.pty;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** {@code GET /pty/{id}}: whether the shell runs and how many bytes it ever produced. */
public final class PtySessionStatus {
    private final String sessionId;
    private final boolean running;
    private final long outputOffset;

    public PtySessionStatus(String sessionId, boolean running, long outputOffset) {
        this.sessionId = sessionId;
        this.running = running;
        this.outputOffset = outputOffset;
    }

    public String getSessionId() {
        return sessionId;
    }

    public boolean getRunning() {
        return running;
    }

    /** Bytes ever produced: the offset the next byte will get. */
    public long getOutputOffset() {
        return outputOffset;
    }

    /** Internal: from the native JSON form. */
    public static PtySessionStatus fromJson(Object json) {
        Map<?, ?> m = (Map<?, ?>) json;
        Long offset = Json.long_(m.get("output_offset"));
        return new PtySessionStatus(Json.str(m.get("session_id")),
                Boolean.TRUE.equals(Json.boolean_(m.get("running"))), offset == null ? 0 : offset);
    }
}
