// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** Build-time readiness probe of a template ({@code tcp://host:port} or {@code cmd://command}). */
public final class TemplateReadiness {
    private final String probe;
    private final Integer warmupSeconds;

    private TemplateReadiness(String probe, Integer warmupSeconds) {
        this.probe = probe;
        this.warmupSeconds = warmupSeconds;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getProbe() {
        return probe;
    }

    public Integer getWarmupSeconds() {
        return warmupSeconds;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("probe", probe, "warmup_seconds", warmupSeconds);
    }

    /** Internal: from the op layer's form. */
    public static TemplateReadiness fromJson(Object json) {
        if (!(json instanceof Map)) {
            return null;
        }
        Map<?, ?> m = (Map<?, ?>) json;
        return new TemplateReadiness(Json.str(m.get("probe")), Json.integer(m.get("warmup_seconds")));
    }

    public static final class Builder {
        private String probe;
        private Integer warmupSeconds;

        public Builder probe(String probe) {
            if (probe == null || probe.trim().isEmpty()) {
                throw new InvalidArgumentException("Probe cannot be blank");
            }
            this.probe = probe;
            return this;
        }

        public Builder warmupSeconds(int warmupSeconds) {
            if (warmupSeconds < 0) {
                throw new InvalidArgumentException("Warmup seconds must not be negative");
            }
            this.warmupSeconds = warmupSeconds;
            return this;
        }

        public TemplateReadiness build() {
            return new TemplateReadiness(probe, warmupSeconds);
        }
    }
}
