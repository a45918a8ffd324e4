// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** A binding's auth as the vault reports it: its wire type ({@code apiKey}, ...) and header name. */
public final class CredentialAuthMetadata {
    private final String type;
    private final String name;

    public CredentialAuthMetadata(String type, String name) {
        this.type = type;
        this.name = name;
    }

    public String getType() {
        return type;
    }

    public String getName() {
        return name;
    }

    /** The op layer's (snake_case) form. */
    public Map<String, Object> toJson() {
        return Json.obj("type", type, "name", name);
    }
}
