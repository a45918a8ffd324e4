// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.time.OffsetDateTime;
import java.util.Map;

/** What the sandbox's isolator supports. */
public final class IsolatedCapabilities {
    private final Map<?, ?> json;

    private IsolatedCapabilities(Map<?, ?> json) {
        this.json = json;
    }

    public Boolean getAvailable() {
        return Json.boolean_(json.get("available"));
    }

    public String getIsolator() {
        return Json.str(json.get("isolator"));
    }

    public String getVersion() {
        return Json.str(json.get("version"));
    }

    public String getMessage() {
        return Json.str(json.get("message"));
    }

    public Boolean getCommitSupported() {
        return Json.boolean_(json.get("commit_supported"));
    }

    public Boolean getDiffSupported() {
        return Json.boolean_(json.get("diff_supported"));
    }

    /** Internal: from the op layer's form. */
    public static IsolatedCapabilities fromJson(Object json) {
        return json instanceof Map ? new IsolatedCapabilities((Map<?, ?>) json) : null;
    }

    /** The op layer's (snake_case) form, with every field the server sent. */
    public Map<?, ?> toJson() {
        return json;
    }

    @Override
    public String toString() {
        return "IsolatedCapabilities" + Json.write(json);
    }
}
