// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** SnapshotStatus (same shape and getters as the official SDK). */
public final class SnapshotStatus {
    private final String state;
    private final String reason;
    private final String message;

    public SnapshotStatus(String state, String reason, String message) {
        this.state = state;
        this.reason = reason;
        this.message = message;
    }

    public String getState() {
        return state;
    }

    public String getReason() {
        return reason;
    }

    public String getMessage() {
        return message;
    }

    /** Internal: from the native JSON form. */
    public static SnapshotStatus fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SnapshotStatus(
            Json.str(m.get("state")),
            Json.str(m.get("reason")),
            Json.str(m.get("message")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("state", state);
        m.put("reason", reason);
        m.put("message", message);
        return m;
    }

    @Override
    public String toString() {
        return "SnapshotStatus" + toJson();
    }
}
