// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.Map;

/** A background run started in an isolated session (addition over the Kotlin SDK). */
public final class IsolatedBackgroundRun {
    private final Map<?, ?> json;

    private IsolatedBackgroundRun(Map<?, ?> json) {
        this.json = json;
    }

    public String getSessionId() {
        return Json.str(json.get("session_id"));
    }

    public String getRunId() {
        return Json.str(json.get("run_id"));
    }

    public OffsetDateTime getStartedAt() {
        return Json.time(json.get("started_at"));
    }

    /** Internal: from the op layer's form. */
    public static IsolatedBackgroundRun fromJson(Object json) {
        return json instanceof Map ? new IsolatedBackgroundRun((Map<?, ?>) json) : null;
    }

    /** The op layer's (snake_case) form, with every field the server sent. */
    public Map<?, ?> toJson() {
        return json;
    }

    @Override
    public String toString() {
        return "IsolatedBackgroundRun" + Json.write(json);
    }
}
