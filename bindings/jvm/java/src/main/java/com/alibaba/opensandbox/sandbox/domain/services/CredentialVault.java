// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.services;

import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Credential;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialBinding;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialBindingMetadata;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialBindingMutationSet;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialMetadata;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialMutationSet;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialVaultCreateRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialVaultPatchRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialVaultState;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.util.List;
import java.util.Map;

/**
 * The sandbox's Credential Vault ({@code sandbox.credentialVault()}): credentials and bindings held by
 * its egress sidecar, which injects them into matching outbound requests. The sandbox must have been
 * created with {@code credentialProxy(CredentialProxyConfig.enabled())} (otherwise the server answers 412).
 */
public final class CredentialVault {
    private final long handle;

    /** Internal: use {@code sandbox.credentialVault()}. */
    public CredentialVault(long handle) {
        this.handle = handle;
    }

    private Map<String, Object> args(Object... kv) {
        Map<String, Object> m = Json.obj(kv);
        m.put("sandbox", handle);
        return m;
    }

    public CredentialVaultState create(CredentialVaultCreateRequest request) {
        Map<String, Object> a = request.toJson();
        a.put("sandbox", handle);
        return CredentialVaultState.fromJson(NativeBridge.invoke("credential_vault.create", a));
    }

    public CredentialVaultState create(List<Credential> credentials, List<CredentialBinding> bindings) {
        return create(CredentialVaultCreateRequest.builder().credentials(credentials).bindings(bindings).build());
    }

    public CredentialVaultState get() {
        return CredentialVaultState.fromJson(NativeBridge.invoke("credential_vault.get", args()));
    }

    /** Applies the changes atomically; {@code expectedRevision} (when set) must match or the server answers 409. */
    public CredentialVaultState patch(CredentialVaultPatchRequest request) {
        Map<String, Object> a = request.toJson();
        a.put("sandbox", handle);
        return CredentialVaultState.fromJson(NativeBridge.invoke("credential_vault.patch", a));
    }

    public CredentialVaultState patch(Integer expectedRevision, CredentialMutationSet credentials,
            CredentialBindingMutationSet bindings) {
        return patch(CredentialVaultPatchRequest.builder().expectedRevision(expectedRevision).credentials(credentials)
                .bindings(bindings).build());
    }

    public void delete() {
        NativeBridge.invoke("credential_vault.delete", args());
    }

    public List<CredentialMetadata> listCredentials() {
        return Json.list(NativeBridge.invoke("credential_vault.list_credentials", args()), CredentialMetadata::fromJson);
    }

    public CredentialMetadata getCredential(String name) {
        return CredentialMetadata.fromJson(NativeBridge.invoke("credential_vault.get_credential", args("name", name)));
    }

    public List<CredentialBindingMetadata> listBindings() {
        return Json.list(NativeBridge.invoke("credential_vault.list_bindings", args()), CredentialBindingMetadata::fromJson);
    }

    public CredentialBindingMetadata getBinding(String name) {
        return CredentialBindingMetadata.fromJson(NativeBridge.invoke("credential_vault.get_binding", args("name", name)));
    }
}
