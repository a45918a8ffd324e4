// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** A credential of the sandbox's Credential Vault. */
public final class Credential {
    private final String name;
    private final InlineCredentialSource source;

    private Credential(String name, InlineCredentialSource source) {
        this.name = name;
        this.source = source;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getName() {
        return name;
    }

    public InlineCredentialSource getSource() {
        return source;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("name", name, "source", source.toJson());
    }

    public static final class Builder {
        private String name;
        private InlineCredentialSource source;

        public Builder name(String name) {
            if (name == null || name.trim().isEmpty()) {
                throw new InvalidArgumentException("Credential name cannot be blank");
            }
            this.name = name;
            return this;
        }

        public Builder source(InlineCredentialSource source) {
            this.source = source;
            return this;
        }

        public Builder inlineSource(String value) {
            this.source = InlineCredentialSource.of(value);
            return this;
        }

        public Credential build() {
            if (name == null) {
                throw new InvalidArgumentException("Credential name must be specified");
            }
            if (source == null) {
                throw new InvalidArgumentException("Credential source must be specified");
            }
            return new Credential(name, source);
        }
    }
}
