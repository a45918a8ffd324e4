// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.Map;

/** A created (or attached) isolated session: its id and creation time; {@link #toJson()} has the effective parameters. */
public final class IsolatedSessionInfo {
    private final Map<?, ?> json;

    private IsolatedSessionInfo(Map<?, ?> json) {
        this.json = json;
    }

    public String getSessionId() {
        return Json.str(json.get("session_id"));
    }

    public OffsetDateTime getCreatedAt() {
        return Json.time(json.get("created_at"));
    }

    /** Internal: from the op layer's form. */
    public static IsolatedSessionInfo fromJson(Object json) {
        return json instanceof Map ? new IsolatedSessionInfo((Map<?, ?>) json) : null;
    }

    /** The op layer's (snake_case) form, with every field the server sent. */
    public Map<?, ?> toJson() {
        return json;
    }

    @Override
    public String toString() {
        return "IsolatedSessionInfo" + Json.write(json);
    }
}
