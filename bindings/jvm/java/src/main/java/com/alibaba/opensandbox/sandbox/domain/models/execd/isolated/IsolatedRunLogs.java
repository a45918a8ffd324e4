// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** Output of a background run in an isolated session from a byte offset (addition over the Kotlin SDK). */
public final class IsolatedRunLogs {
    private final String text;
    private final Long cursor;

    public IsolatedRunLogs(String text, Long cursor) {
        this.text = text;
        this.cursor = cursor;
    }

    public String getText() {
        return text;
    }

    /** The offset to pass next time. */
    public Long getCursor() {
        return cursor;
    }

    /** Internal: from the op layer's form. */
    public static IsolatedRunLogs fromJson(Object json) {
        Map<?, ?> m = (Map<?, ?>) json;
        return new IsolatedRunLogs(Json.str(m.get("text")), Json.long_(m.get("cursor")));
    }

    /** The op layer's (snake_case) form. */
    public Map<String, Object> toJson() {
        return Json.obj("text", text, "cursor", cursor);
    }
}
