// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** SandboxImageSpec (same shape and getters as the official SDK). */
public final class SandboxImageSpec {
    private final String image;
    private final SandboxImageAuth auth;

    public SandboxImageSpec(String image) {
        this(image, null);
    }

    public SandboxImageSpec(String image, SandboxImageAuth auth) {
        this.image = image;
        this.auth = auth;
    }

    public String getImage() {
        return image;
    }

    /** Registry credentials (sent on create, never returned by the server). */
    public SandboxImageAuth getAuth() {
        return auth;
    }

    /** Internal: from the native JSON form. */
    public static SandboxImageSpec fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SandboxImageSpec(
            Json.str(m.get("uri")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("uri", image);
        return m;
    }

    @Override
    public String toString() {
        return "SandboxImageSpec" + toJson();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builder of SandboxImageSpec. */
    public static final class Builder {
        private String image;
        private SandboxImageAuth auth;

        public Builder image(String image) {
            this.image = image;
            return this;
        }

        public Builder auth(SandboxImageAuth auth) {
            this.auth = auth;
            return this;
        }

        public Builder auth(String username, String password) {
            this.auth = SandboxImageAuth.builder().username(username).password(password).build();
            return this;
        }

        public SandboxImageSpec build() {
            return new SandboxImageSpec(image, auth);
        }
    }
}
