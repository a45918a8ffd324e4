// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/** Credentials and bindings of a new Credential Vault. */
public final class CredentialVaultCreateRequest {
    private final List<Credential> credentials;
    private final List<CredentialBinding> bindings;

    private CredentialVaultCreateRequest(List<Credential> credentials, List<CredentialBinding> bindings) {
        this.credentials = credentials;
        this.bindings = bindings;
    }

    public static Builder builder() {
        return new Builder();
    }

    public List<Credential> getCredentials() {
        return credentials;
    }

    public List<CredentialBinding> getBindings() {
        return bindings;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("credentials", Json.mapList(credentials, Credential::toJson),
                "bindings", Json.mapList(bindings, CredentialBinding::toJson));
    }

    public static final class Builder {
        private List<Credential> credentials = Collections.emptyList();
        private List<CredentialBinding> bindings = Collections.emptyList();

        public Builder credentials(List<Credential> credentials) {
            this.credentials = new ArrayList<>(credentials);
            return this;
        }

        public Builder bindings(List<CredentialBinding> bindings) {
            this.bindings = new ArrayList<>(bindings);
            return this;
        }

        public CredentialVaultCreateRequest build() {
            return new CredentialVaultCreateRequest(credentials, bindings);
        }
    }
}
