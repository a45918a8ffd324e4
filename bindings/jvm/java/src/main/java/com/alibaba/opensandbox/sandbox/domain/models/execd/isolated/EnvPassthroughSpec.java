// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/** Which of execd's environment variables a session sees ({@code deny} by default, {@code allow}). */
public final class EnvPassthroughSpec {
    private final String mode;
    private final List<String> keys;

    public EnvPassthroughSpec(String mode, List<String> keys) {
        this.mode = mode == null ? "deny" : mode;
        this.keys = keys == null ? Collections.emptyList() : new ArrayList<>(keys);
    }

    public EnvPassthroughSpec() {
        this(null, null);
    }

    public String getMode() {
        return mode;
    }

    public List<String> getKeys() {
        return keys;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("mode", mode, "keys", keys);
    }
}
