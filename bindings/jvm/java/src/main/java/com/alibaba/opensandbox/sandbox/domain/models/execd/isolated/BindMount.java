// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** A sandbox path bound into an isolated session (at {@code dest}, default the same path). */
public final class BindMount {
    private final String source;
    private final String dest;
    private final Boolean readonly;

    public BindMount(String source, String dest, Boolean readonly) {
        if (source == null || source.trim().isEmpty()) {
            throw new InvalidArgumentException("Bind mount source cannot be blank");
        }
        this.source = source;
        this.dest = dest;
        this.readonly = readonly;
    }

    public BindMount(String source) {
        this(source, null, null);
    }

    public String getSource() {
        return source;
    }

    public String getDest() {
        return dest;
    }

    public Boolean getReadonly() {
        return readonly;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("source", source, "dest", dest, "readonly", readonly);
    }
}
