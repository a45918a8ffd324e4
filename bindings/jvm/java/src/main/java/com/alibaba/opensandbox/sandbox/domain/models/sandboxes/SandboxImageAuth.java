// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** Registry credentials of a private image ({@code SandboxImageSpec.builder().auth(...)}). */
public final class SandboxImageAuth {
    private final String username;
    private final String password;

    private SandboxImageAuth(String username, String password) {
        this.username = username;
        this.password = password;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getUsername() {
        return username;
    }

    public String getPassword() {
        return password;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("username", username, "password", password);
    }

    @Override
    public String toString() {
        return "SandboxImageAuth(username=" + username + ", password=***)";
    }

    public static final class Builder {
        private String username;
        private String password;

        public Builder username(String username) {
            if (username == null || username.trim().isEmpty()) {
                throw new InvalidArgumentException("Username cannot be blank");
            }
            this.username = username;
            return this;
        }

        public Builder password(String password) {
            if (password == null || password.trim().isEmpty()) {
                throw new InvalidArgumentException("Password cannot be blank");
            }
            this.password = password;
            return this;
        }

        public SandboxImageAuth build() {
            if (username == null || password == null) {
                throw new InvalidArgumentException("Username and password must be specified");
            }
            return new SandboxImageAuth(username, password);
        }
    }
}
