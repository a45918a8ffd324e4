// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** Starts the sandbox's credential proxy (needed by {@code sandbox.credentialVault()}). */
public final class CredentialProxyConfig {
    private final boolean enabled;

    private CredentialProxyConfig(boolean enabled) {
        this.enabled = enabled;
    }

    public static Builder builder() {
        return new Builder();
    }

    public static CredentialProxyConfig enabled() {
        return new CredentialProxyConfig(true);
    }

    public boolean getEnabled() {
        return enabled;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("enabled", enabled);
    }

    public static final class Builder {
        private boolean enabled;

        public Builder enabled(boolean enabled) {
            this.enabled = enabled;
            return this;
        }

        public CredentialProxyConfig build() {
            return new CredentialProxyConfig(enabled);
        }
    }
}
