// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** SearchEntry (same shape and getters as the official SDK). */
public final class SearchEntry {
    private final String path;
    private final String pattern;

    public SearchEntry(String path, String pattern) {
        this.path = path;
        this.pattern = pattern;
    }

    public String getPath() {
        return path;
    }

    public String getPattern() {
        return pattern;
    }

    /** Internal: from the native JSON form. */
    public static SearchEntry fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SearchEntry(
            Json.str(m.get("path")),
            Json.str(m.get("pattern")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", path);
        m.put("pattern", pattern);
        return m;
    }

    @Override
    public String toString() {
        return "SearchEntry" + toJson();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builder of SearchEntry. */
    public static final class Builder {
        private String path;
        private String pattern;

        public Builder path(String path) {
            this.path = path;
            return this;
        }

        public Builder pattern(String pattern) {
            this.pattern = pattern;
            return this;
        }

        public SearchEntry build() {
            return new SearchEntry(path, pattern);
        }
    }
}
