// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.NetworkPolicy;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PlatformSpec;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxImageSpec;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Volume;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * How a pool creates its sandboxes (warmup and direct create). Defaults as {@code Sandbox.builder()}:
 * {@code tail -f /dev/null}, 1 CPU / 2Gi. The sandbox timeout is the pool's idle timeout.
 */
public final class PoolCreationSpec {
    public static final List<String> DEFAULT_ENTRYPOINT = List.of("tail", "-f", "/dev/null");
    public static final Map<String, String> DEFAULT_RESOURCE = Map.ofEntries(Map.entry("cpu", "1"), Map.entry("memory", "2Gi"));

    private final SandboxImageSpec imageSpec;
    private final List<String> entrypoint;
    private final Map<String, String> resource;
    private final Map<String, String> env;
    private final Map<String, String> metadata;
    private final Map<String, String> extensions;
    private final NetworkPolicy networkPolicy;
    private final PlatformSpec platform;
    private final boolean secureAccess;
    private final List<Volume> volumes;

    private PoolCreationSpec(Builder b) {
        this.imageSpec = b.imageSpec;
        this.entrypoint = List.copyOf(b.entrypoint);
        this.resource = Collections.unmodifiableMap(new LinkedHashMap<>(b.resource));
        this.env = Collections.unmodifiableMap(new LinkedHashMap<>(b.env));
        this.metadata = Collections.unmodifiableMap(new LinkedHashMap<>(b.metadata));
        this.extensions = Collections.unmodifiableMap(new LinkedHashMap<>(b.extensions));
        this.networkPolicy = b.networkPolicy;
        this.platform = b.platform;
        this.secureAccess = b.secureAccess;
        this.volumes = b.volumes == null ? null : List.copyOf(b.volumes);
    }

    public static Builder builder() {
        return new Builder();
    }

    public SandboxImageSpec getImageSpec() {
        return imageSpec;
    }

    public List<String> getEntrypoint() {
        return entrypoint;
    }

    public Map<String, String> getResource() {
        return resource;
    }

    public Map<String, String> getEnv() {
        return env;
    }

    public Map<String, String> getMetadata() {
        return metadata;
    }

    public Map<String, String> getExtensions() {
        return extensions;
    }

    public NetworkPolicy getNetworkPolicy() {
        return networkPolicy;
    }

    public PlatformSpec getPlatform() {
        return platform;
    }

    public boolean getSecureAccess() {
        return secureAccess;
    }

    public List<Volume> getVolumes() {
        return volumes;
    }

    public static final class Builder {
        private SandboxImageSpec imageSpec;
        private List<String> entrypoint = DEFAULT_ENTRYPOINT;
        private Map<String, String> resource = DEFAULT_RESOURCE;
        private Map<String, String> env = new LinkedHashMap<>();
        private Map<String, String> metadata = new LinkedHashMap<>();
        private Map<String, String> extensions = new LinkedHashMap<>();
        private NetworkPolicy networkPolicy;
        private PlatformSpec platform;
        private boolean secureAccess;
        private List<Volume> volumes;

        public Builder imageSpec(SandboxImageSpec imageSpec) {
            this.imageSpec = imageSpec;
            return this;
        }

        public Builder image(String image) {
            this.imageSpec = SandboxImageSpec.builder().image(image).build();
            return this;
        }

        public Builder entrypoint(List<String> entrypoint) {
            this.entrypoint = entrypoint;
            return this;
        }

        public Builder entrypoint(String... entrypoint) {
            return entrypoint(Arrays.asList(entrypoint));
        }

        public Builder resource(Map<String, String> resource) {
            this.resource = resource;
            return this;
        }

        /** Edits a copy of the default limits. */
        public Builder resource(Consumer<Map<String, String>> configure) {
            Map<String, String> m = new LinkedHashMap<>(DEFAULT_RESOURCE);
            configure.accept(m);
            this.resource = m;
            return this;
        }

        public Builder env(Map<String, String> env) {
            this.env = new LinkedHashMap<>(env);
            return this;
        }

        public Builder env(String key, String value) {
            if (key == null || key.trim().isEmpty()) {
                throw new InvalidArgumentException("Environment variable key cannot be blank");
            }
            this.env.put(key, value);
            return this;
        }

        public Builder metadata(Map<String, String> metadata) {
            this.metadata = new LinkedHashMap<>(metadata);
            return this;
        }

        public Builder metadata(String key, String value) {
            if (key == null || key.trim().isEmpty()) {
                throw new InvalidArgumentException("Metadata key cannot be blank");
            }
            this.metadata.put(key, value);
            return this;
        }

        public Builder extension(String key, String value) {
            if (key == null || key.trim().isEmpty()) {
                throw new InvalidArgumentException("Extension key cannot be blank");
            }
            this.extensions.put(key, value);
            return this;
        }

        public Builder extensions(Map<String, String> extensions) {
            this.extensions.putAll(extensions);
            return this;
        }

        public Builder networkPolicy(NetworkPolicy networkPolicy) {
            this.networkPolicy = networkPolicy;
            return this;
        }

        public Builder platform(PlatformSpec platform) {
            this.platform = platform;
            return this;
        }

        public Builder secureAccess(boolean enabled) {
            this.secureAccess = enabled;
            return this;
        }

        public Builder secureAccess() {
            return secureAccess(true);
        }

        public Builder volumes(List<Volume> volumes) {
            this.volumes = volumes == null ? null : new ArrayList<>(volumes);
            return this;
        }

        public Builder volume(Volume volume) {
            if (this.volumes == null) {
                this.volumes = new ArrayList<>();
            }
            this.volumes.add(volume);
            return this;
        }

        public PoolCreationSpec build() {
            if (imageSpec == null) {
                throw new InvalidArgumentException("PoolCreationSpec imageSpec (or image) must be specified");
            }
            return new PoolCreationSpec(this);
        }
    }
}
