// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.List;
import java.util.Map;

/** The vault's state: its revision, credentials (no values) and bindings. */
public final class CredentialVaultState {
    private final Integer revision;
    private final List<CredentialMetadata> credentials;
    private final List<CredentialBindingMetadata> bindings;

    public CredentialVaultState(Integer revision, List<CredentialMetadata> credentials, List<CredentialBindingMetadata> bindings) {
        this.revision = revision;
        this.credentials = credentials;
        this.bindings = bindings;
    }

    public Integer getRevision() {
        return revision;
    }

    public List<CredentialMetadata> getCredentials() {
        return credentials;
    }

    public List<CredentialBindingMetadata> getBindings() {
        return bindings;
    }

    /** Internal: from the op layer's form. */
    public static CredentialVaultState fromJson(Object json) {
        Map<?, ?> m = (Map<?, ?>) json;
        return new CredentialVaultState(Json.integer(m.get("revision")),
                Json.list(m.get("credentials"), CredentialMetadata::fromJson),
                Json.list(m.get("bindings"), CredentialBindingMetadata::fromJson));
    }

    /** The op layer's (snake_case) form. */
    public Map<String, Object> toJson() {
        return Json.obj("revision", revision, "credentials", Json.mapList(credentials, CredentialMetadata::toJson),
                "bindings", Json.mapList(bindings, CredentialBindingMetadata::toJson));
    }
}
