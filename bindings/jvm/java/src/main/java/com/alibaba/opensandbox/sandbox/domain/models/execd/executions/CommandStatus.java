// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;

/** CommandStatus (same shape and getters as the official SDK). */
public final class CommandStatus {
    private final String id;
    private final String content;
    private final Boolean running;
    private final Integer exitCode;
    private final String error;
    private final OffsetDateTime startedAt;
    private final OffsetDateTime finishedAt;

    public CommandStatus(String id, String content, Boolean running, Integer exitCode, String error, OffsetDateTime startedAt, OffsetDateTime finishedAt) {
        this.id = id;
        this.content = content;
        this.running = running;
        this.exitCode = exitCode;
        this.error = error;
        this.startedAt = startedAt;
        this.finishedAt = finishedAt;
    }

    public String getId() {
        return id;
    }

    public String getContent() {
        return content;
    }

    public Boolean getRunning() {
        return running;
    }

    public Integer getExitCode() {
        return exitCode;
    }

    public String getError() {
        return error;
    }

    public OffsetDateTime getStartedAt() {
        return startedAt;
    }

    public OffsetDateTime getFinishedAt() {
        return finishedAt;
    }

    /** Internal: from the native JSON form. */
    public static CommandStatus fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new CommandStatus(
            Json.str(m.get("id")),
            Json.str(m.get("content")),
            Json.boolean_(m.get("running")),
            Json.integer(m.get("exit_code")),
            Json.str(m.get("error")),
            Json.time(m.get("started_at")),
            Json.time(m.get("finished_at")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("content", content);
        m.put("running", running);
        m.put("exit_code", exitCode);
        m.put("error", error);
        m.put("started_at", startedAt == null ? null : java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(startedAt));
        m.put("finished_at", finishedAt == null ? null : java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(finishedAt));
        return m;
    }

    @Override
    public String toString() {
        return "CommandStatus" + toJson();
    }
}
