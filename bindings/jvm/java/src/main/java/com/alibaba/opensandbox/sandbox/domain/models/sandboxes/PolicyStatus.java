// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** PolicyStatus (same shape and getters as the official SDK). */
public final class PolicyStatus {
    private final String status;
    private final String mode;

    public PolicyStatus(String status, String mode) {
        this.status = status;
        this.mode = mode;
    }

    public String getStatus() {
        return status;
    }

    public String getMode() {
        return mode;
    }

    /** Internal: from the native JSON form. */
    public static PolicyStatus fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new PolicyStatus(
            Json.str(m.get("status")),
            Json.str(m.get("mode")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("status", status);
        m.put("mode", mode);
        return m;
    }

    @Override
    public String toString() {
        return "PolicyStatus" + toJson();
    }
}
