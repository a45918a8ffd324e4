// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** NetworkPolicy (same shape and getters as the official SDK). */
public final class NetworkPolicy {
    private final String defaultAction;
    private final List<NetworkRule> egress;

    public NetworkPolicy(String defaultAction, List<NetworkRule> egress) {
        this.defaultAction = defaultAction;
        this.egress = egress;
    }

    public String getDefaultAction() {
        return defaultAction;
    }

    public List<NetworkRule> getEgress() {
        return egress;
    }

    /** Internal: from the native JSON form. */
    public static NetworkPolicy fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new NetworkPolicy(
            Json.str(m.get("default_action")),
            Json.list(m.get("egress"), NetworkRule::fromJson));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("default_action", defaultAction);
        m.put("egress", egress == null ? null : Json.mapList(egress, NetworkRule::toJson));
        return m;
    }

    @Override
    public String toString() {
        return "NetworkPolicy" + toJson();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The official default actions ({@code "allow"}/{@code "deny"} on the wire and in the getters). */
    public enum DefaultAction {
        ALLOW("allow"),
        DENY("deny");

        private final String value;

        DefaultAction(String value) {
            this.value = value;
        }

        public String getValue() {
            return value;
        }
    }

    /** Builder of NetworkPolicy. */
    public static final class Builder {
        private String defaultAction;
        private List<NetworkRule> egress;

        public Builder defaultAction(String defaultAction) {
            this.defaultAction = defaultAction;
            return this;
        }

        public Builder defaultAction(DefaultAction defaultAction) {
            this.defaultAction = defaultAction == null ? null : defaultAction.getValue();
            return this;
        }

        public Builder egress(List<NetworkRule> egress) {
            this.egress = egress;
            return this;
        }

        public Builder addEgress(NetworkRule item) {
            if (this.egress == null) {
                this.egress = new java.util.ArrayList<>();
            }
            this.egress.add(item);
            return this;
        }

        public NetworkPolicy build() {
            return new NetworkPolicy(defaultAction, egress);
        }
    }
}
