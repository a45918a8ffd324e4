// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/** How a Credential Vault binding authenticates the matched requests. */
public final class CredentialAuth {
    /** Auth types (wire names {@code bearer}, {@code basic}, {@code apiKey}, {@code customHeaders}, {@code passthrough}). */
    public enum Type {
        BEARER("bearer"),
        BASIC("basic"),
        API_KEY("apiKey"),
        CUSTOM_HEADERS("customHeaders"),
        PASSTHROUGH("passthrough");

        private final String wire;

        Type(String wire) {
            this.wire = wire;
        }

        public String wireName() {
            return wire;
        }
    }

    private final Type type;
    private final String credential;
    private final String name;
    private final List<CustomHeaderEntry> headers;
    private final List<CredentialSubstitution> substitutions;

    private CredentialAuth(Builder b) {
        this.type = b.type;
        this.credential = b.credential;
        this.name = b.name;
        this.headers = b.headers;
        this.substitutions = b.substitutions;
    }

    public static Builder builder() {
        return new Builder();
    }

    public static CredentialAuth bearer(String credential) {
        return builder().type(Type.BEARER).credential(credential).build();
    }

    public static CredentialAuth basic(String credential) {
        return builder().type(Type.BASIC).credential(credential).build();
    }

    public static CredentialAuth apiKey(String name, String credential) {
        return builder().type(Type.API_KEY).name(name).credential(credential).build();
    }

    public static CredentialAuth customHeaders(List<CustomHeaderEntry> headers) {
        return builder().type(Type.CUSTOM_HEADERS).headers(headers).build();
    }

    public static CredentialAuth passthrough(List<CredentialSubstitution> substitutions) {
        return builder().type(Type.PASSTHROUGH).substitutions(substitutions).build();
    }

    public static CredentialAuth passthrough() {
        return passthrough(Collections.emptyList());
    }

    public Type getType() {
        return type;
    }

    public String getCredential() {
        return credential;
    }

    public String getName() {
        return name;
    }

    public List<CustomHeaderEntry> getHeaders() {
        return headers;
    }

    public List<CredentialSubstitution> getSubstitutions() {
        return substitutions;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = Json.obj("type", type.wireName(), "credential", credential, "name", name);
        if (headers != null) {
            m.put("headers", Json.mapList(headers, CustomHeaderEntry::toJson));
        }
        if (substitutions != null) {
            m.put("substitutions", Json.mapList(substitutions, CredentialSubstitution::toJson));
        }
        return m;
    }

    public static final class Builder {
        private Type type;
        private String credential;
        private String name;
        private List<CustomHeaderEntry> headers;
        private List<CredentialSubstitution> substitutions;

        public Builder type(Type type) {
            this.type = type;
            return this;
        }

        public Builder credential(String credential) {
            if (credential == null || credential.trim().isEmpty()) {
                throw new InvalidArgumentException("Credential auth credential cannot be blank");
            }
            this.credential = credential;
            return this;
        }

        public Builder name(String name) {
            if (name == null || name.trim().isEmpty()) {
                throw new InvalidArgumentException("Credential auth name cannot be blank");
            }
            this.name = name;
            return this;
        }

        public Builder headers(List<CustomHeaderEntry> headers) {
            if (headers == null || headers.isEmpty()) {
                throw new InvalidArgumentException("Credential auth headers cannot be empty");
            }
            this.headers = new ArrayList<>(headers);
            return this;
        }

        public Builder headers(CustomHeaderEntry... headers) {
            return headers(Arrays.asList(headers));
        }

        public Builder substitutions(List<CredentialSubstitution> substitutions) {
            this.substitutions = new ArrayList<>(substitutions);
            return this;
        }

        public Builder substitutions(CredentialSubstitution... substitutions) {
            return substitutions(Arrays.asList(substitutions));
        }

        public Builder substitution(CredentialSubstitution substitution) {
            if (substitutions == null) {
                substitutions = new ArrayList<>();
            }
            substitutions.add(substitution);
            return this;
        }

        public CredentialAuth build() {
            if (type == null) {
                throw new InvalidArgumentException("Credential auth type must be specified");
            }
            switch (type) {
                case BEARER:
                case BASIC:
                    if (credential == null) {
                        throw new InvalidArgumentException("Credential auth credential must be specified");
                    }
                    break;
                case API_KEY:
                    if (name == null || credential == null) {
                        throw new InvalidArgumentException("API key auth name and credential must be specified");
                    }
                    break;
                case CUSTOM_HEADERS:
                    if (headers == null || headers.isEmpty()) {
                        throw new InvalidArgumentException("Custom headers auth headers must be specified");
                    }
                    break;
                default:
                    break;
            }
            return new CredentialAuth(this);
        }
    }
}
