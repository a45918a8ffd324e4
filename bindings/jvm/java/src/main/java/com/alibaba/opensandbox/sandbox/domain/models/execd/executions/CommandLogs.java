// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** CommandLogs (same shape and getters as the official SDK). */
public final class CommandLogs {
    private final String content;
    private final Long cursor;

    public CommandLogs(String content, Long cursor) {
        this.content = content;
        this.cursor = cursor;
    }

    public String getContent() {
        return content;
    }

    public Long getCursor() {
        return cursor;
    }

    /** Internal: from the native JSON form. */
    public static CommandLogs fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new CommandLogs(
            Json.str(m.get("content")),
            Json.long_(m.get("cursor")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("content", content);
        m.put("cursor", cursor);
        return m;
    }

    @Override
    public String toString() {
        return "CommandLogs" + toJson();
    }
}
