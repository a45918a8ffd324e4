// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** MoveEntry (same shape and getters as the official SDK). */
public final class MoveEntry {
    private final String src;
    private final String dest;

    public MoveEntry(String src, String dest) {
        this.src = src;
        this.dest = dest;
    }

    public String getSrc() {
        return src;
    }

    public String getDest() {
        return dest;
    }

    /** Internal: from the native JSON form. */
    public static MoveEntry fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new MoveEntry(
            Json.str(m.get("src")),
            Json.str(m.get("dest")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("src", src);
        m.put("dest", dest);
        return m;
    }

    @Override
    public String toString() {
        return "MoveEntry" + toJson();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builder of MoveEntry. */
    public static final class Builder {
        private String src;
        private String dest;

        public Builder src(String src) {
            this.src = src;
            return this;
        }

        public Builder dest(String dest) {
            this.dest = dest;
            return this;
        }

        public MoveEntry build() {
            return new MoveEntry(src, dest);
        }
    }
}
