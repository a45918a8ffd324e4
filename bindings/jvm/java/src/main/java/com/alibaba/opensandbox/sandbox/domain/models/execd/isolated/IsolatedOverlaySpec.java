// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/**
 * A directory mounted into an isolated session ({@code overlay}: writes stay in the session; {@code rw};
 * {@code ro}). Addition over the Kotlin SDK: the execd API's {@code overlays}.
 */
public final class IsolatedOverlaySpec {
    private final String path;
    private final String mode;
    private final Boolean persist;

    public IsolatedOverlaySpec(String path, String mode, Boolean persist) {
        if (path == null || path.trim().isEmpty()) {
            throw new InvalidArgumentException("Isolated overlay path cannot be blank");
        }
        this.path = path;
        this.mode = mode;
        this.persist = persist;
    }

    public IsolatedOverlaySpec(String path) {
        this(path, null, null);
    }

    public String getPath() {
        return path;
    }

    public String getMode() {
        return mode;
    }

    public Boolean getPersist() {
        return persist;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("path", path, "mode", mode, "persist", persist);
    }
}
