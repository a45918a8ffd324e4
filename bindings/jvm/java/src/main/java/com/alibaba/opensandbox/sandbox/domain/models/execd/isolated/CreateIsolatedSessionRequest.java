// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * A new isolated session: a workspace (or overlays), a profile ({@code strict} by default,
 * {@code balanced}), binds, network sharing, env passthrough, user, idle timeout.
 */
public final class CreateIsolatedSessionRequest {
    private final Builder b;

    private CreateIsolatedSessionRequest(Builder b) {
        this.b = b;
    }

    public CreateIsolatedSessionRequest(IsolatedWorkspaceSpec workspace) {
        this(builder().workspace(workspace));
    }

    public static Builder builder() {
        return new Builder();
    }

    public IsolatedWorkspaceSpec getWorkspace() {
        return b.workspace;
    }

    public List<IsolatedOverlaySpec> getOverlays() {
        return b.overlays;
    }

    public String getProfile() {
        return b.profile;
    }

    public List<String> getExtraWritable() {
        return b.extraWritable;
    }

    public List<BindMount> getBinds() {
        return b.binds;
    }

    public Boolean getShareNet() {
        return b.shareNet;
    }

    public EnvPassthroughSpec getEnvPassthrough() {
        return b.envPassthrough;
    }

    public Integer getUid() {
        return b.uid;
    }

    public Integer getGid() {
        return b.gid;
    }

    public String getUidMode() {
        return b.uidMode;
    }

    public Integer getIdleTimeoutSeconds() {
        return b.idleTimeoutSeconds;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = Json.obj("profile", b.profile, "extra_writable", b.extraWritable, "share_net", b.shareNet,
                "uid", b.uid, "gid", b.gid, "uid_mode", b.uidMode, "idle_timeout_seconds", b.idleTimeoutSeconds);
        if (b.workspace != null) {
            m.put("workspace", b.workspace.toJson());
        }
        if (b.overlays != null) {
            m.put("overlays", Json.mapList(b.overlays, IsolatedOverlaySpec::toJson));
        }
        if (b.binds != null) {
            m.put("binds", Json.mapList(b.binds, BindMount::toJson));
        }
        if (b.envPassthrough != null) {
            m.put("env_passthrough", b.envPassthrough.toJson());
        }
        return m;
    }

    public static final class Builder {
        private IsolatedWorkspaceSpec workspace;
        private List<IsolatedOverlaySpec> overlays;
        private String profile;
        private List<String> extraWritable;
        private List<BindMount> binds;
        private Boolean shareNet;
        private EnvPassthroughSpec envPassthrough;
        private Integer uid;
        private Integer gid;
        private String uidMode;
        private Integer idleTimeoutSeconds;

        public Builder workspace(IsolatedWorkspaceSpec workspace) {
            this.workspace = workspace;
            return this;
        }

        public Builder workspace(String path) {
            return workspace(new IsolatedWorkspaceSpec(path));
        }

        public Builder overlays(List<IsolatedOverlaySpec> overlays) {
            this.overlays = new ArrayList<>(overlays);
            return this;
        }

        public Builder overlays(IsolatedOverlaySpec... overlays) {
            return overlays(Arrays.asList(overlays));
        }

        public Builder profile(String profile) {
            this.profile = profile;
            return this;
        }

        public Builder extraWritable(List<String> extraWritable) {
            this.extraWritable = new ArrayList<>(extraWritable);
            return this;
        }

        public Builder binds(List<BindMount> binds) {
            this.binds = new ArrayList<>(binds);
            return this;
        }

        public Builder shareNet(Boolean shareNet) {
            this.shareNet = shareNet;
            return this;
        }

        public Builder envPassthrough(EnvPassthroughSpec envPassthrough) {
            this.envPassthrough = envPassthrough;
            return this;
        }

        public Builder uid(Integer uid) {
            this.uid = uid;
            return this;
        }

        public Builder gid(Integer gid) {
            this.gid = gid;
            return this;
        }

        public Builder uidMode(String uidMode) {
            this.uidMode = uidMode;
            return this;
        }

        public Builder idleTimeoutSeconds(Integer idleTimeoutSeconds) {
            if (idleTimeoutSeconds != null && idleTimeoutSeconds < 0) {
                throw new InvalidArgumentException("Idle timeout must not be negative");
            }
            this.idleTimeoutSeconds = idleTimeoutSeconds;
            return this;
        }

        public CreateIsolatedSessionRequest build() {
            if (workspace == null && (overlays == null || overlays.isEmpty())) {
                throw new InvalidArgumentException("An isolated session needs a workspace or at least one overlay");
            }
            return new CreateIsolatedSessionRequest(this);
        }
    }
}
