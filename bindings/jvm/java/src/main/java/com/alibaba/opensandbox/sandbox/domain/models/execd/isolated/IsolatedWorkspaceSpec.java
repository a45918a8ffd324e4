// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** The working directory of an isolated session and how it is mounted ({@code overlay} by default, {@code rw}, {@code ro}). */
public final class IsolatedWorkspaceSpec {
    private final String path;
    private final String mode;

    public IsolatedWorkspaceSpec(String path, String mode) {
        if (path == null || path.trim().isEmpty()) {
            throw new InvalidArgumentException("Isolated workspace path cannot be blank");
        }
        this.path = path;
        this.mode = mode;
    }

    public IsolatedWorkspaceSpec(String path) {
        this(path, null);
    }

    public String getPath() {
        return path;
    }

    public String getMode() {
        return mode;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("path", path, "mode", mode);
    }
}
