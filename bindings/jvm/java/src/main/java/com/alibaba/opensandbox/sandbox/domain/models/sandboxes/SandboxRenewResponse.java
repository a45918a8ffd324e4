// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;

/** SandboxRenewResponse (same shape and getters as the official SDK). */
public final class SandboxRenewResponse {
    private final OffsetDateTime expiresAt;

    public SandboxRenewResponse(OffsetDateTime expiresAt) {
        this.expiresAt = expiresAt;
    }

    public OffsetDateTime getExpiresAt() {
        return expiresAt;
    }

    /** Internal: from the native JSON form. */
    public static SandboxRenewResponse fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SandboxRenewResponse(
            Json.time(m.get("expires_at")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("expires_at", expiresAt == null ? null : java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(expiresAt));
        return m;
    }

    @Override
    public String toString() {
        return "SandboxRenewResponse" + toJson();
    }
}
