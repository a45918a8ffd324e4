// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** SandboxInfo (same shape and getters as the official SDK). */
public final class SandboxInfo {
    private final String id;
    private final SandboxStatus status;
    private final List<String> entrypoint;
    private final OffsetDateTime expiresAt;
    private final OffsetDateTime createdAt;
    private final SandboxImageSpec image;
    private final String snapshotId;
    private final Map<String,String> metadata;

    public SandboxInfo(String id, SandboxStatus status, List<String> entrypoint, OffsetDateTime expiresAt, OffsetDateTime createdAt, SandboxImageSpec image, String snapshotId, Map<String,String> metadata) {
        this.id = id;
        this.status = status;
        this.entrypoint = entrypoint;
        this.expiresAt = expiresAt;
        this.createdAt = createdAt;
        this.image = image;
        this.snapshotId = snapshotId;
        this.metadata = metadata;
    }

    public String getId() {
        return id;
    }

    public SandboxStatus getStatus() {
        return status;
    }

    public List<String> getEntrypoint() {
        return entrypoint;
    }

    public OffsetDateTime getExpiresAt() {
        return expiresAt;
    }

    public OffsetDateTime getCreatedAt() {
        return createdAt;
    }

    public SandboxImageSpec getImage() {
        return image;
    }

    public String getSnapshotId() {
        return snapshotId;
    }

    public Map<String,String> getMetadata() {
        return metadata;
    }

    /** Internal: from the native JSON form. */
    public static SandboxInfo fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SandboxInfo(
            Json.str(m.get("id")),
            SandboxStatus.fromJson(m.get("status")),
            Json.strList(m.get("entrypoint")),
            Json.time(m.get("expires_at")),
            Json.time(m.get("created_at")),
            SandboxImageSpec.fromJson(m.get("image")),
            Json.str(m.get("snapshot_id")),
            Json.strMap(m.get("metadata")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("status", status == null ? null : status.toJson());
        m.put("entrypoint", entrypoint);
        m.put("expires_at", expiresAt == null ? null : java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(expiresAt));
        m.put("created_at", createdAt == null ? null : java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(createdAt));
        m.put("image", image == null ? null : image.toJson());
        m.put("snapshot_id", snapshotId);
        m.put("metadata", metadata);
        return m;
    }

    @Override
    public String toString() {
        return "SandboxInfo" + toJson();
    }
}
