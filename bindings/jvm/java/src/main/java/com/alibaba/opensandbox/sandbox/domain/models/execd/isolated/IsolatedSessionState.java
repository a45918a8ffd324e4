// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.Map;

/** An isolated session's state ({@code active}, ...) and effective parameters ({@link #toJson()}). */
public final class IsolatedSessionState {
    private final Map<?, ?> json;

    private IsolatedSessionState(Map<?, ?> json) {
        this.json = json;
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

    public String getProfile() {
        return Json.str(json.get("profile"));
    }

    public Integer getUid() {
        return Json.integer(json.get("uid"));
    }

    public Integer getGid() {
        return Json.integer(json.get("gid"));
    }

    public String getUidMode() {
        return Json.str(json.get("uid_mode"));
    }

    public Boolean getShareNet() {
        return Json.boolean_(json.get("share_net"));
    }

    /** Internal: from the op layer's form. */
    public static IsolatedSessionState fromJson(Object json) {
        return json instanceof Map ? new IsolatedSessionState((Map<?, ?>) json) : null;
    }

    /** The op layer's (snake_case) form, with every field the server sent. */
    public Map<?, ?> toJson() {
        return json;
    }

    @Override
    public String toString() {
        return "IsolatedSessionState" + Json.write(json);
    }
}
