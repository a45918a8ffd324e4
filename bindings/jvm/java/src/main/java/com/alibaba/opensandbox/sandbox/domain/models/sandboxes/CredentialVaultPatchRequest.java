// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** An atomic change of a Credential Vault, optionally guarded by the expected revision (409 on mismatch). */
public final class CredentialVaultPatchRequest {
    private final Integer expectedRevision;
    private final CredentialMutationSet credentials;
    private final CredentialBindingMutationSet bindings;

    private CredentialVaultPatchRequest(Integer expectedRevision, CredentialMutationSet credentials,
            CredentialBindingMutationSet bindings) {
        this.expectedRevision = expectedRevision;
        this.credentials = credentials;
        this.bindings = bindings;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Integer getExpectedRevision() {
        return expectedRevision;
    }

    public CredentialMutationSet getCredentials() {
        return credentials;
    }

    public CredentialBindingMutationSet getBindings() {
        return bindings;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = Json.obj("expected_revision", expectedRevision);
        if (credentials != null) {
            m.put("credentials", credentials.toJson());
        }
        if (bindings != null) {
            m.put("bindings", bindings.toJson());
        }
        return m;
    }

    public static final class Builder {
        private Integer expectedRevision;
        private CredentialMutationSet credentials;
        private CredentialBindingMutationSet bindings;

        public Builder expectedRevision(Integer expectedRevision) {
            this.expectedRevision = expectedRevision;
            return this;
        }

        public Builder credentials(CredentialMutationSet credentials) {
            this.credentials = credentials;
            return this;
        }

        public Builder bindings(CredentialBindingMutationSet bindings) {
            this.bindings = bindings;
            return this;
        }

        public CredentialVaultPatchRequest build() {
            return new CredentialVaultPatchRequest(expectedRevision, credentials, bindings);
        }
    }
}
