// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** A Credential Vault binding: a request match and the auth applied to it. */
public final class CredentialBinding {
    private final String name;
    private final CredentialMatch match;
    private final CredentialAuth auth;

    private CredentialBinding(String name, CredentialMatch match, CredentialAuth auth) {
        this.name = name;
        this.match = match;
        this.auth = auth;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getName() {
        return name;
    }

    public CredentialMatch getMatch() {
        return match;
    }

    public CredentialAuth getAuth() {
        return auth;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("name", name, "match", match.toJson(), "auth", auth.toJson());
    }

    public static final class Builder {
        private String name;
        private CredentialMatch match;
        private CredentialAuth auth;

        public Builder name(String name) {
            if (name == null || name.trim().isEmpty()) {
                throw new InvalidArgumentException("Credential binding name cannot be blank");
            }
            this.name = name;
            return this;
        }

        public Builder match(CredentialMatch match) {
            this.match = match;
            return this;
        }

        public Builder auth(CredentialAuth auth) {
            this.auth = auth;
            return this;
        }

        public CredentialBinding build() {
            if (name == null || match == null || auth == null) {
                throw new InvalidArgumentException("Credential binding name, match and auth must be specified");
            }
            return new CredentialBinding(name, match, auth);
        }
    }
}
