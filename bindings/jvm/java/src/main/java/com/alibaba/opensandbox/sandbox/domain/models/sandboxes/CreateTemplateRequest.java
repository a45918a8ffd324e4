// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Builds a template from an OCI image ({@code SandboxManager.createTemplate}). The build is
 * asynchronous: poll {@code getTemplate} until the phase is {@link TemplatePhase#SUCCEEDED} or
 * {@link TemplatePhase#FAILED}.
 */
public final class CreateTemplateRequest {
    private final String image;
    private final String publish;
    private final Map<String, String> resourceLimits;
    private final List<String> entrypoint;
    private final Map<String, String> env;
    private final Map<String, String> metadata;
    private final TemplateReadiness readiness;
    private final TemplateFormat format;

    private CreateTemplateRequest(Builder b) {
        this.image = b.image;
        this.publish = b.publish;
        this.resourceLimits = b.resourceLimits;
        this.entrypoint = b.entrypoint;
        this.env = b.env;
        this.metadata = b.metadata;
        this.readiness = b.readiness;
        this.format = b.format;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getImage() {
        return image;
    }

    public String getPublish() {
        return publish;
    }

    public Map<String, String> getResourceLimits() {
        return resourceLimits;
    }

    public List<String> getEntrypoint() {
        return entrypoint;
    }

    /** Environment baked into the template (addition: the server's API has it, the Kotlin builder not). */
    public Map<String, String> getEnv() {
        return env;
    }

    public Map<String, String> getMetadata() {
        return metadata;
    }

    public TemplateReadiness getReadiness() {
        return readiness;
    }

    public TemplateFormat getFormat() {
        return format;
    }

    /** Internal: the op layer's arguments. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = Json.obj("image", image, "publish", publish);
        if (resourceLimits != null) {
            m.put("resource_limits", resourceLimits);
        }
        if (entrypoint != null) {
            m.put("entrypoint", entrypoint);
        }
        if (env != null) {
            m.put("env", env);
        }
        if (metadata != null) {
            m.put("metadata", metadata);
        }
        if (readiness != null) {
            m.put("readiness", readiness.toJson());
        }
        if (format != null) {
            m.put("format", format.wireName());
        }
        return m;
    }

    public static final class Builder {
        private String image;
        private String publish;
        private Map<String, String> resourceLimits;
        private List<String> entrypoint;
        private Map<String, String> env;
        private Map<String, String> metadata;
        private TemplateReadiness readiness;
        private TemplateFormat format;

        public Builder image(String image) {
            if (image == null || image.trim().isEmpty()) {
                throw new InvalidArgumentException("Template image cannot be blank");
            }
            this.image = image;
            return this;
        }

        public Builder publish(String publish) {
            if (publish == null || publish.trim().isEmpty()) {
                throw new InvalidArgumentException("Template publish target cannot be blank");
            }
            this.publish = publish;
            return this;
        }

        public Builder resourceLimits(Map<String, String> resourceLimits) {
            this.resourceLimits = new LinkedHashMap<>(resourceLimits);
            return this;
        }

        public Builder resourceLimits(Consumer<Map<String, String>> configure) {
            Map<String, String> m = new LinkedHashMap<>();
            configure.accept(m);
            this.resourceLimits = m;
            return this;
        }

        public Builder entrypoint(List<String> entrypoint) {
            this.entrypoint = entrypoint;
            return this;
        }

        public Builder entrypoint(String... entrypoint) {
            return entrypoint(Arrays.asList(entrypoint));
        }

        public Builder env(Map<String, String> env) {
            this.env = new LinkedHashMap<>(env);
            return this;
        }

        public Builder metadata(Map<String, String> metadata) {
            this.metadata = new LinkedHashMap<>(metadata);
            return this;
        }

        public Builder metadata(Consumer<Map<String, String>> configure) {
            Map<String, String> m = new LinkedHashMap<>();
            configure.accept(m);
            this.metadata = m;
            return this;
        }

        public Builder readiness(TemplateReadiness readiness) {
            this.readiness = readiness;
            return this;
        }

        public Builder readiness(Consumer<TemplateReadiness.Builder> configure) {
            TemplateReadiness.Builder b = TemplateReadiness.builder();
            configure.accept(b);
            this.readiness = b.build();
            return this;
        }

        public Builder format(TemplateFormat format) {
            this.format = format;
            return this;
        }

        public CreateTemplateRequest build() {
            if (image == null) {
                throw new InvalidArgumentException("Template image must be specified");
            }
            if (publish == null) {
                throw new InvalidArgumentException("Template publish target must be specified");
            }
            return new CreateTemplateRequest(this);
        }
    }
}
