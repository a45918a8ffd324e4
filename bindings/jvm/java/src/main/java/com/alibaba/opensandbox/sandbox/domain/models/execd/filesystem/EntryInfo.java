// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;

/** EntryInfo (same shape and getters as the official SDK). */
public final class EntryInfo {
    private final String path;
    private final String type;
    private final Integer mode;
    private final String owner;
    private final String group;
    private final Long size;
    private final OffsetDateTime modifiedAt;
    private final OffsetDateTime createdAt;

    public EntryInfo(String path, String type, Integer mode, String owner, String group, Long size, OffsetDateTime modifiedAt, OffsetDateTime createdAt) {
        this.path = path;
        this.type = type;
        this.mode = mode;
        this.owner = owner;
        this.group = group;
        this.size = size;
        this.modifiedAt = modifiedAt;
        this.createdAt = createdAt;
    }

    public String getPath() {
        return path;
    }

    public String getType() {
        return type;
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

    public Long getSize() {
        return size;
    }

    public OffsetDateTime getModifiedAt() {
        return modifiedAt;
    }

    public OffsetDateTime getCreatedAt() {
        return createdAt;
    }

    /** Internal: from the native JSON form. */
    public static EntryInfo fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new EntryInfo(
            Json.str(m.get("path")),
            Json.str(m.get("type")),
            Json.integer(m.get("mode")),
            Json.str(m.get("owner")),
            Json.str(m.get("group")),
            Json.long_(m.get("size")),
            Json.time(m.get("modified_at")),
            Json.time(m.get("created_at")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", path);
        m.put("type", type);
        m.put("mode", mode);
        m.put("owner", owner);
        m.put("group", group);
        m.put("size", size);
        m.put("modified_at", modifiedAt == null ? null : java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(modifiedAt));
        m.put("created_at", createdAt == null ? null : java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(createdAt));
        return m;
    }

    @Override
    public String toString() {
        return "EntryInfo" + toJson();
    }
}
