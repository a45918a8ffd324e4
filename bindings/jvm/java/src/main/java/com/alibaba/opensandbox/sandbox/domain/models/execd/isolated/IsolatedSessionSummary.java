// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.Map;

/** One session of {@code isolation().list()}. */
public final class IsolatedSessionSummary {
    private final Map<?, ?> json;

    private IsolatedSessionSummary(Map<?, ?> json) {
        this.json = json;
    }

    public String getSessionId() {
        return Json.str(json.get("session_id"));
    }

    public String getStatus() {
        return Json.str(json.get("status"));
    }

    public OffsetDateTime getCreatedAt() {
        return Json.time(json.get("created_at"));
    }

    public OffsetDateTime getLastRunAt() {
        return Json.time(json.get("last_run_at"));
    }

    public Integer getIdleRemainingSeconds() {
        return Json.integer(json.get("idle_remaining_seconds"));
    }

    /** Internal: from the op layer's form. */
    public static IsolatedSessionSummary fromJson(Object json) {
        return json instanceof Map ? new IsolatedSessionSummary((Map<?, ?>) json) : null;
    }

    /** The op layer's (snake_case) form, with every field the server sent. */
    public Map<?, ?> toJson() {
        return json;
    }

    @Override
    public String toString() {
        return "IsolatedSessionSummary" + Json.write(json);
    }
}
