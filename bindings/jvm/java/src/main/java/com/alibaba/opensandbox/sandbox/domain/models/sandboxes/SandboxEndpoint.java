// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** SandboxEndpoint (same shape and getters as the official SDK). */
public final class SandboxEndpoint {
    private final String endpoint;
    private final Map<String,String> headers;

    public SandboxEndpoint(String endpoint, Map<String,String> headers) {
        this.endpoint = endpoint;
        this.headers = headers;
    }

    public String getEndpoint() {
        return endpoint;
    }

    public Map<String,String> getHeaders() {
        return headers;
    }

    /** Internal: from the native JSON form. */
    public static SandboxEndpoint fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new SandboxEndpoint(
            Json.str(m.get("endpoint")),
            Json.strMap(m.get("headers")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("endpoint", endpoint);
        m.put("headers", headers);
        return m;
    }

    @Override
    public String toString() {
        return "SandboxEndpoint" + toJson();
    }
}
