// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** Host-path backend of a {@link Volume}. */
public final class Host {
    private final String path;

    private Host(String path) {
        if (path == null || !path.startsWith("/")) {
            throw new InvalidArgumentException("Host path must be an absolute path, got: " + path);
        }
        this.path = path;
    }

    public static Host of(String path) {
        return new Host(path);
    }

    public String getPath() {
        return path;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("path", path);
    }
}
