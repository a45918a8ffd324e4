// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Map;

/** A volume mounted into a new sandbox: exactly one backend ({@link Host}, {@link PVC} or {@link OSSFS}). */
public final class Volume {
    private final String name;
    private final Host host;
    private final PVC pvc;
    private final OSSFS ossfs;
    private final String mountPath;
    private final boolean readOnly;
    private final String subPath;

    private Volume(Builder b) {
        this.name = b.name;
        this.host = b.host;
        this.pvc = b.pvc;
        this.ossfs = b.ossfs;
        this.mountPath = b.mountPath;
        this.readOnly = b.readOnly;
        this.subPath = b.subPath;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getName() {
        return name;
    }

    public Host getHost() {
        return host;
    }

    public PVC getPvc() {
        return pvc;
    }

    public OSSFS getOssfs() {
        return ossfs;
    }

    public String getMountPath() {
        return mountPath;
    }

    public boolean getReadOnly() {
        return readOnly;
    }

    public String getSubPath() {
        return subPath;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = Json.obj("name", name, "mount_path", mountPath, "read_only", readOnly, "sub_path", subPath);
        if (host != null) {
            m.put("host", host.toJson());
        }
        if (pvc != null) {
            m.put("pvc", pvc.toJson());
        }
        if (ossfs != null) {
            m.put("ossfs", ossfs.toJson());
        }
        return m;
    }

    public static final class Builder {
        private String name;
        private Host host;
        private PVC pvc;
        private OSSFS ossfs;
        private String mountPath;
        private boolean readOnly;
        private String subPath;

        public Builder name(String name) {
            if (name == null || name.trim().isEmpty()) {
                throw new InvalidArgumentException("Volume name cannot be blank");
            }
            this.name = name;
            return this;
        }

        public Builder host(Host host) {
            this.host = host;
            return this;
        }

        public Builder pvc(PVC pvc) {
            this.pvc = pvc;
            return this;
        }

        public Builder ossfs(OSSFS ossfs) {
            this.ossfs = ossfs;
            return this;
        }

        public Builder mountPath(String mountPath) {
            if (mountPath == null || !mountPath.startsWith("/")) {
                throw new InvalidArgumentException("Mount path must be an absolute path, got: " + mountPath);
            }
            this.mountPath = mountPath;
            return this;
        }

        public Builder readOnly(boolean readOnly) {
            this.readOnly = readOnly;
            return this;
        }

        public Builder subPath(String subPath) {
            this.subPath = subPath;
            return this;
        }

        public Volume build() {
            if (name == null) {
                throw new InvalidArgumentException("Volume name must be specified");
            }
            if (mountPath == null) {
                throw new InvalidArgumentException("Volume mount path must be specified");
            }
            int backends = (host != null ? 1 : 0) + (pvc != null ? 1 : 0) + (ossfs != null ? 1 : 0);
            if (backends != 1) {
                throw new InvalidArgumentException("Exactly one volume backend (host, pvc or ossfs) must be specified");
            }
            return new Volume(this);
        }
    }
}
