// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** Kubernetes PersistentVolumeClaim backend of a {@link Volume}. */
public final class PVC {
    private final String claimName;

    private PVC(String claimName) {
        if (claimName == null || claimName.trim().isEmpty()) {
            throw new InvalidArgumentException("PVC claim name cannot be blank");
        }
        this.claimName = claimName;
    }

    public static PVC of(String claimName) {
        return new PVC(claimName);
    }

    public String getClaimName() {
        return claimName;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("claim_name", claimName);
    }
}
