// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** Write-only inline credential material (never returned by the server). */
public final class InlineCredentialSource {
    public static final String TYPE_INLINE = "inline";
    private final String value;
    private final String type;

    private InlineCredentialSource(String value, String type) {
        this.value = value;
        this.type = type;
    }

    public static Builder builder() {
        return new Builder();
    }

    public static InlineCredentialSource of(String value) {
        return builder().value(value).build();
    }

    public String getValue() {
        return value;
    }

    public String getType() {
        return type;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("type", type, "value", value);
    }

    @Override
    public String toString() {
        return "InlineCredentialSource(type=" + type + ", value=***)";
    }

    public static final class Builder {
        private String value;
        private String type = TYPE_INLINE;

        public Builder value(String value) {
            if (value == null || value.isEmpty()) {
                throw new InvalidArgumentException("Credential source value cannot be empty");
            }
            this.value = value;
            return this;
        }

        public Builder type(String type) {
            if (!TYPE_INLINE.equals(type)) {
                throw new InvalidArgumentException("Credential source type must be inline");
            }
            this.type = type;
            return this;
        }

        public InlineCredentialSource build() {
            if (value == null) {
                throw new InvalidArgumentException("Credential source value must be specified");
            }
            return new InlineCredentialSource(value, type);
        }
    }
}
