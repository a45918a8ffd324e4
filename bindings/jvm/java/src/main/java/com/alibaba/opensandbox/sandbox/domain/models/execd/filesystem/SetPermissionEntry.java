// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** SetPermissionEntry (same shape and getters as the official SDK). */
public final class SetPermissionEntry {
    private final String path;
    private final Integer mode;
    private final String owner;
    private final String group;

    public SetPermissionEntry(String path, Integer mode, String owner, String group) {
        this.path = path;
        this.mode = mode;
        this.owner = owner;
        this.group = group;
    }

    public String getPath() {
        return path;
    }

    public Integer getMode() {
        return mode;
    }

    public String getOwner() {
        return owner;
    }

    public String getGroup() {
        return group;
    }

    /** Internal: from the native JSON form. */
    public static SetPermissionEntry fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SetPermissionEntry(
            Json.str(m.get("path")),
            Json.integer(m.get("mode")),
            Json.str(m.get("owner")),
            Json.str(m.get("group")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", path);
        m.put("mode", mode);
        m.put("owner", owner);
        m.put("group", group);
        return m;
    }

    @Override
    public String toString() {
        return "SetPermissionEntry" + toJson();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builder of SetPermissionEntry. */
    public static final class Builder {
        private String path;
        private Integer mode;
        private String owner;
        private String group;

        public Builder path(String path) {
            this.path = path;
            return this;
        }

        public Builder mode(Integer mode) {
            this.mode = mode;
            return this;
        }

        public Builder owner(String owner) {
            this.owner = owner;
            return this;
        }

        public Builder group(String group) {
            this.group = group;
            return this;
        }

        public SetPermissionEntry build() {
            return new SetPermissionEntry(path, mode, owner, group);
        }
    }
}
