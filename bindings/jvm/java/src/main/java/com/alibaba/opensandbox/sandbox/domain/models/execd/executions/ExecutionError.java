// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** ExecutionError (same shape and getters as the official SDK). */
public final class ExecutionError {
    private final String name;
    private final String value;
    private final Long timestamp;
    private final List<String> traceback;

    public ExecutionError(String name, String value, Long timestamp, List<String> traceback) {
        this.name = name;
        this.value = value;
        this.timestamp = timestamp;
        this.traceback = traceback;
    }

    public String getName() {
        return name;
    }

    public String getValue() {
        return value;
    }

    public Long getTimestamp() {
        return timestamp;
    }

    public List<String> getTraceback() {
        return traceback;
    }

    /** Internal: from the native JSON form. */
    public static ExecutionError fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new ExecutionError(
            Json.str(m.get("name")),
            Json.str(m.get("value")),
            Json.long_(m.get("timestamp")),
            Json.strList(m.get("traceback")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", name);
        m.put("value", value);
        m.put("timestamp", timestamp);
        m.put("traceback", traceback);
        return m;
    }

    @Override
    public String toString() {
        return "ExecutionError" + toJson();
    }
}
