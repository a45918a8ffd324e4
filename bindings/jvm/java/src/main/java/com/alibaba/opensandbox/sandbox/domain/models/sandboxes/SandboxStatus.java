// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;

/** SandboxStatus (same shape and getters as the official SDK). */
public final class SandboxStatus {
    private final String state;
    private final String reason;
    private final String message;
    private final OffsetDateTime lastTransitionAt;

    public SandboxStatus(String state, String reason, String message, OffsetDateTime lastTransitionAt) {
        this.state = state;
        this.reason = reason;
        this.message = message;
        this.lastTransitionAt = lastTransitionAt;
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

    public OffsetDateTime getLastTransitionAt() {
        return lastTransitionAt;
    }

    /** Internal: from the native JSON form. */
    public static SandboxStatus fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SandboxStatus(
            Json.str(m.get("state")),
            Json.str(m.get("reason")),
            Json.str(m.get("message")),
            Json.time(m.get("last_transition_at")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("state", state);
        m.put("reason", reason);
        m.put("message", message);
        m.put("last_transition_at", lastTransitionAt == null ? null : java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(lastTransitionAt));
        return m;
    }

    @Override
    public String toString() {
        return "SandboxStatus" + toJson();
    }
}
