// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** ReplaceResult (same shape and getters as the official SDK). */
public final class ReplaceResult {
    private final String path;
    private final Long replacedCount;

    public ReplaceResult(String path, Long replacedCount) {
        this.path = path;
        this.replacedCount = replacedCount;
    }

    public String getPath() {
        return path;
    }

    public Long getReplacedCount() {
        return replacedCount;
    }

    /** Internal: from the native JSON form. */
    public static ReplaceResult fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new ReplaceResult(
            Json.str(m.get("path")),
            Json.long_(m.get("replaced_count")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", path);
        m.put("replaced_count", replacedCount);
        return m;
    }

    @Override
    public String toString() {
        return "ReplaceResult" + toJson();
    }
}
