// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Kubernetes PersistentVolumeClaim backend of a {@link Volume}. */
public final class PVC {
    private final String claimName;
    private final Boolean createIfNotExists;
    private final Boolean deleteOnSandboxTermination;
    private final String storageClass;
    private final String storage;
    private final List<String> accessModes;

    private PVC(Builder b) {
        this.claimName = b.claimName;
        this.createIfNotExists = b.createIfNotExists;
        this.deleteOnSandboxTermination = b.deleteOnSandboxTermination;
        this.storageClass = b.storageClass;
        this.storage = b.storage;
        this.accessModes = b.accessModes;
    }

    public static PVC of(String claimName) {
        return builder().claimName(claimName).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getClaimName() {
        return claimName;
    }

    public Boolean getCreateIfNotExists() {
        return createIfNotExists;
    }

    public Boolean getDeleteOnSandboxTermination() {
        return deleteOnSandboxTermination;
    }

    public String getStorageClass() {
        return storageClass;
    }

    public String getStorage() {
        return storage;
    }

    public List<String> getAccessModes() {
        return accessModes;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = Json.obj("claim_name", claimName);
        if (createIfNotExists != null) {
            m.put("create_if_not_exists", createIfNotExists);
        }
        if (deleteOnSandboxTermination != null) {
            m.put("delete_on_sandbox_termination", deleteOnSandboxTermination);
        }
        if (storageClass != null) {
            m.put("storage_class", storageClass);
        }
        if (storage != null) {
            m.put("storage", storage);
        }
        if (accessModes != null) {
            m.put("access_modes", accessModes);
        }
        return m;
    }

    public static final class Builder {
        private String claimName;
        private Boolean createIfNotExists;
        private Boolean deleteOnSandboxTermination;
        private String storageClass;
        private String storage;
        private List<String> accessModes;

        public Builder claimName(String claimName) {
            if (claimName == null || claimName.trim().isEmpty()) {
                throw new InvalidArgumentException("PVC claim name cannot be blank");
            }
            this.claimName = claimName;
            return this;
        }

        public Builder createIfNotExists(boolean createIfNotExists) {
            this.createIfNotExists = createIfNotExists;
            return this;
        }

        public Builder deleteOnSandboxTermination(boolean deleteOnSandboxTermination) {
            this.deleteOnSandboxTermination = deleteOnSandboxTermination;
            return this;
        }

        public Builder storageClass(String storageClass) {
            this.storageClass = storageClass;
            return this;
        }

        public Builder storage(String storage) {
            this.storage = storage;
            return this;
        }

        public Builder accessModes(List<String> accessModes) {
            this.accessModes = new ArrayList<>(accessModes);
            return this;
        }

        public PVC build() {
            if (claimName == null) {
                throw new InvalidArgumentException("Claim name must be specified");
            }
            return new PVC(this);
        }
    }
}
