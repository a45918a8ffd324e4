// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** One header of {@code customHeaders} auth: the header name and the credential giving its value. */
public final class CustomHeaderEntry {
    private final String name;
    private final String credential;

    private CustomHeaderEntry(String name, String credential) {
        this.name = name;
        this.credential = credential;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getName() {
        return name;
    }

    public String getCredential() {
        return credential;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("name", name, "credential", credential);
    }

    public static final class Builder {
        private String name;
        private String credential;

        public Builder name(String name) {
            if (name == null || name.trim().isEmpty()) {
                throw new InvalidArgumentException("Custom header name cannot be blank");
            }
            this.name = name;
            return this;
        }

        public Builder credential(String credential) {
            if (credential == null || credential.trim().isEmpty()) {
                throw new InvalidArgumentException("Custom header credential cannot be blank");
            }
            this.credential = credential;
            return this;
        }

        public CustomHeaderEntry build() {
            if (name == null || credential == null) {
                throw new InvalidArgumentException("Custom header name and credential must be specified");
            }
            return new CustomHeaderEntry(name, credential);
        }
    }
}
