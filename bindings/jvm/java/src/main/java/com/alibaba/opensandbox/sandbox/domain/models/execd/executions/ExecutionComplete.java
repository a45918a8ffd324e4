// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** ExecutionComplete (same shape and getters as the official SDK). */
public final class ExecutionComplete {
    private final Long timestamp;
    private final Long executionTimeInMillis;

    public ExecutionComplete(Long timestamp, Long executionTimeInMillis) {
        this.timestamp = timestamp;
        this.executionTimeInMillis = executionTimeInMillis;
    }

    public Long getTimestamp() {
        return timestamp;
    }

    public Long getExecutionTimeInMillis() {
        return executionTimeInMillis;
    }

    /** Internal: from the native JSON form. */
    public static ExecutionComplete fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new ExecutionComplete(
            Json.long_(m.get("timestamp")),
            Json.long_(m.get("execution_time_ms")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("timestamp", timestamp);
        m.put("execution_time_ms", executionTimeInMillis);
        return m;
    }

    @Override
    public String toString() {
        return "ExecutionComplete" + toJson();
    }
}
