// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** NetworkRule (same shape and getters as the official SDK). */
public final class NetworkRule {
    private final String action;
    private final String target;

    public NetworkRule(String action, String target) {
        this.action = action;
        this.target = target;
    }

    public String getAction() {
        return action;
    }

    public String getTarget() {
        return target;
    }

    /** Internal: from the native JSON form. */
    public static NetworkRule fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new NetworkRule(
            Json.str(m.get("action")),
            Json.str(m.get("target")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("action", action);
        m.put("target", target);
        return m;
    }

    @Override
    public String toString() {
        return "NetworkRule" + toJson();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The official rule actions ({@code "allow"}/{@code "deny"} on the wire and in the getters). */
    public enum Action {
        ALLOW("allow"),
        DENY("deny");

        private final String value;

        Action(String value) {
            this.value = value;
        }

        public String getValue() {
            return value;
        }
    }

    /** Builder of NetworkRule. */
    public static final class Builder {
        private String action;
        private String target;

        public Builder action(String action) {
            this.action = action;
            return this;
        }

        public Builder action(Action action) {
            this.action = action == null ? null : action.getValue();
            return this;
        }

        public Builder target(String target) {
            this.target = target;
            return this;
        }

        public NetworkRule build() {
            return new NetworkRule(action, target);
        }
    }
}
