// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** Runtime platform constraint of a new sandbox: os {@code linux}|{@code windows}, arch {@code amd64}|{@code arm64}. */
public final class PlatformSpec {
    private final String os;
    private final String arch;

    private PlatformSpec(String os, String arch) {
        this.os = os;
        this.arch = arch;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getOs() {
        return os;
    }

    public String getArch() {
        return arch;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("os", os, "arch", arch);
    }

    public static final class Builder {
        private String os;
        private String arch;

        public Builder os(String os) {
            if (!"linux".equals(os) && !"windows".equals(os)) {
                throw new InvalidArgumentException("Platform os must be one of: linux, windows");
            }
            this.os = os;
            return this;
        }

        public Builder arch(String arch) {
            if (!"amd64".equals(arch) && !"arm64".equals(arch)) {
                throw new InvalidArgumentException("Platform arch must be one of: amd64, arm64");
            }
            this.arch = arch;
            return this;
        }

        public PlatformSpec build() {
            if (os == null || arch == null) {
                throw new InvalidArgumentException("Platform os and arch must be specified");
            }
            return new PlatformSpec(os, arch);
        }
    }
}
