// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** A credential as the vault reports it (never its value). */
public final class CredentialMetadata {
    private final String name;
    private final String sourceType;
    private final Integer revision;

    public CredentialMetadata(String name, String sourceType, Integer revision) {
        this.name = name;
        this.sourceType = sourceType;
        this.revision = revision;
    }

    public String getName() {
        return name;
    }

    public String getSourceType() {
        return sourceType;
    }

    public Integer getRevision() {
        return revision;
    }

    /** Internal: from the op layer's form. */
    public static CredentialMetadata fromJson(Object json) {
        Map<?, ?> m = (Map<?, ?>) json;
        return new CredentialMetadata(Json.str(m.get("name")), Json.str(m.get("source_type")), Json.integer(m.get("revision")));
    }

    /** The op layer's (snake_case) form. */
    public Map<String, Object> toJson() {
        return Json.obj("name", name, "source_type", sourceType, "revision", revision);
    }
}
