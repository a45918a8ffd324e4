// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** A binding as the vault reports it. */
public final class CredentialBindingMetadata {
    private final String name;
    private final Integer revision;
    private final CredentialMatch match;
    private final CredentialAuthMetadata auth;
    private final Map<?, ?> json;

    private CredentialBindingMetadata(Map<?, ?> m) {
        this.json = m;
        this.name = Json.str(m.get("name"));
        this.revision = Json.integer(m.get("revision"));
        this.match = CredentialMatch.fromJson(m.get("match"));
        Map<?, ?> a = m.get("auth") instanceof Map ? (Map<?, ?>) m.get("auth") : null;
        this.auth = a == null ? null : new CredentialAuthMetadata(Json.str(a.get("type")), Json.str(a.get("name")));
    }

    public String getName() {
        return name;
    }

    public Integer getRevision() {
        return revision;
    }

    public CredentialMatch getMatch() {
        return match;
    }

    public CredentialAuthMetadata getAuth() {
        return auth;
    }

    /** Internal: from the op layer's form. */
    public static CredentialBindingMetadata fromJson(Object json) {
        return new CredentialBindingMetadata((Map<?, ?>) json);
    }

    /** The op layer's (snake_case) form. */
    public Map<?, ?> toJson() {
        return json;
    }
}
