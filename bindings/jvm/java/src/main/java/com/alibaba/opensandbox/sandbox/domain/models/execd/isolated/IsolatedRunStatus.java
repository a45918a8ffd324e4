// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.Map;

/** The status of a background run in an isolated session (addition over the Kotlin SDK). */
public final class IsolatedRunStatus {
    private final Map<?, ?> json;

    private IsolatedRunStatus(Map<?, ?> json) {
        this.json = json;
    }

    public String getSessionId() {
        return Json.str(json.get("session_id"));
    }

    public String getRunId() {
        return Json.str(json.get("run_id"));
    }

    public Boolean getRunning() {
        return Json.boolean_(json.get("running"));
    }

    public Integer getExitCode() {
        return Json.integer(json.get("exit_code"));
    }

    public String getError() {
        return Json.str(json.get("error"));
    }

    public OffsetDateTime getStartedAt() {
        return Json.time(json.get("started_at"));
    }

    public OffsetDateTime getFinishedAt() {
        return Json.time(json.get("finished_at"));
    }

    /** Internal: from the op layer's form. */
    public static IsolatedRunStatus fromJson(Object json) {
        return json instanceof Map ? new IsolatedRunStatus((Map<?, ?>) json) : null;
    }

    /** The op layer's (snake_case) form, with every field the server sent. */
    public Map<?, ?> toJson() {
        return json;
    }

    @Override
    public String toString() {
        return "IsolatedRunStatus" + Json.write(json);
    }
}
