// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;

/** SnapshotInfo (same shape and getters as the official SDK). */
public final class SnapshotInfo {
    private final String id;
    private final String sandboxId;
    private final String name;
    private final SnapshotStatus status;
    private final OffsetDateTime createdAt;

    public SnapshotInfo(String id, String sandboxId, String name, SnapshotStatus status, OffsetDateTime createdAt) {
        this.id = id;
        this.sandboxId = sandboxId;
        this.name = name;
        this.status = status;
        this.createdAt = createdAt;
    }

    public String getId() {
        return id;
    }

    public String getSandboxId() {
        return sandboxId;
    }

    public String getName() {
        return name;
    }

    public SnapshotStatus getStatus() {
        return status;
    }

    public OffsetDateTime getCreatedAt() {
        return createdAt;
    }

    /** Internal: from the native JSON form. */
    public static SnapshotInfo fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SnapshotInfo(
            Json.str(m.get("id")),
            Json.str(m.get("sandbox_id")),
            Json.str(m.get("name")),
            SnapshotStatus.fromJson(m.get("status")),
            Json.time(m.get("created_at")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("sandbox_id", sandboxId);
        m.put("name", name);
        m.put("status", status == null ? null : status.toJson());
        m.put("created_at", createdAt == null ? null : java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(createdAt));
        return m;
    }

    @Override
    public String toString() {
        return "SnapshotInfo" + toJson();
    }
}
