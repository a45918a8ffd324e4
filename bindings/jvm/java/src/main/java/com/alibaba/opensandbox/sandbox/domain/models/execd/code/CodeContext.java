// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.code;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/** CodeContext (same shape and getters as the official SDK). */
public final class CodeContext {
    private final String id;
    private final String language;
    private final String cwd;

    public CodeContext(String id, String language, String cwd) {
        this.id = id;
        this.language = language;
        this.cwd = cwd;
    }

    public String getId() {
        return id;
    }

    public String getLanguage() {
        return language;
    }

    public String getCwd() {
        return cwd;
    }

    /** Internal: from the native JSON form. */
    public static CodeContext fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new CodeContext(
            Json.str(m.get("id")),
            Json.str(m.get("language")),
            Json.str(m.get("cwd")));
    }

    /** Internal: the native JSON form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("language", language);
        m.put("cwd", cwd);
        return m;
    }

    @Override
    public String toString() {
        return "CodeContext" + toJson();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builder of CodeContext. */
    public static final class Builder {
        private String id;
        private String language;
        private String cwd;

        public Builder id(String id) {
            this.id = id;
            return this;
        }

        public Builder language(String language) {
            this.language = language;
            return this;
        }

        public Builder cwd(String cwd) {
            this.cwd = cwd;
            return this;
        }

        public CodeContext build() {
            return new CodeContext(id, language, cwd);
        }
    }
}
