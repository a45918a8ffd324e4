// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A placeholder the proxy replaces by a credential's value on some request surfaces. */
public final class CredentialSubstitution {
    /** Where the placeholder is replaced. */
    public enum Surface {
        PATH,
        QUERY,
        HEADER,
        BODY
    }

    private final String credential;
    private final String placeholder;
    private final List<Surface> surfaces;

    private CredentialSubstitution(String credential, String placeholder, List<Surface> surfaces) {
        this.credential = credential;
        this.placeholder = placeholder;
        this.surfaces = surfaces;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getCredential() {
        return credential;
    }

    public String getPlaceholder() {
        return placeholder;
    }

    public List<Surface> getSurfaces() {
        return surfaces;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        List<String> in = new ArrayList<>();
        for (Surface s : surfaces) {
            in.add(s.name().toLowerCase(Locale.ROOT));
        }
        return Json.obj("credential", credential, "placeholder", placeholder, "in", in);
    }

    public static final class Builder {
        private String credential;
        private String placeholder;
        private List<Surface> surfaces;

        public Builder credential(String credential) {
            if (credential == null || credential.trim().isEmpty()) {
                throw new InvalidArgumentException("Credential substitution credential cannot be blank");
            }
            this.credential = credential;
            return this;
        }

        public Builder placeholder(String placeholder) {
            if (placeholder == null || placeholder.trim().isEmpty()) {
                throw new InvalidArgumentException("Credential substitution placeholder cannot be blank");
            }
            this.placeholder = placeholder;
            return this;
        }

        public Builder surfaces(List<Surface> surfaces) {
            if (surfaces == null || surfaces.isEmpty()) {
                throw new InvalidArgumentException("Credential substitution surfaces cannot be empty");
            }
            this.surfaces = new ArrayList<>(surfaces);
            return this;
        }

        public Builder surfaces(Surface... surfaces) {
            return surfaces(Arrays.asList(surfaces));
        }

        public CredentialSubstitution build() {
            if (credential == null || placeholder == null || surfaces == null) {
                throw new InvalidArgumentException("Credential substitution credential, placeholder and surfaces must be specified");
            }
            return new CredentialSubstitution(credential, placeholder, surfaces);
        }
    }
}
