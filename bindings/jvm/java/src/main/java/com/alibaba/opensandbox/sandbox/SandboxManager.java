// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CreateTemplateRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.DiagnosticContent;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PagedSandboxInfos;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PagedSnapshotInfos;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxEndpoint;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxFilter;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxInfo;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxRenewResponse;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SnapshotFilter;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SnapshotInfo;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PagedTemplateInfos;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplateFilter;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplateInfo;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/** Administrative operations on sandboxes and snapshots by id. */
public final class SandboxManager implements AutoCloseable {
    private final long handle;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Cleaner.Cleanable cleanable;

    private SandboxManager(ConnectionConfig config) {
        Map<?, ?> r = (Map<?, ?>) NativeBridge.invoke("manager.new", Json.obj("connection", config.nativeHandle()));
        Reference.reachabilityFence(config);
        this.handle = Json.long_(r.get("handle"));
        // A manager that is never closed does not keep its connection pool alive.
        this.cleanable = NativeBridge.releaseOnGc(this, handle);
    }

    public static Builder builder() {
        return new Builder();
    }

    private Map<String, Object> args(Object... kv) {
        Map<String, Object> m = Json.obj(kv);
        m.put("manager", handle);
        return m;
    }

    public PagedSandboxInfos listSandboxInfos(SandboxFilter filter) {
        Map<String, Object> a = args();
        if (filter != null) {
            a.putAll(filter.toJson());
        }
        return PagedSandboxInfos.fromJson(NativeBridge.invoke("manager.list_sandbox_infos", a));
    }

    public SandboxInfo getSandboxInfo(String sandboxId) {
        return SandboxInfo.fromJson(NativeBridge.invoke("manager.get_sandbox_info", args("sandbox_id", sandboxId)));
    }

    public CompletableFuture<SandboxInfo> getSandboxInfoAsync(String sandboxId) {
        return NativeBridge.invokeAsync("manager.get_sandbox_info", args("sandbox_id", sandboxId))
                .thenApply(SandboxInfo::fromJson);
    }

    public SandboxInfo patchSandboxMetadata(String sandboxId, Map<String, String> patch) {
        return SandboxInfo.fromJson(NativeBridge.invoke("manager.patch_sandbox_metadata",
                args("sandbox_id", sandboxId, "patch", patch)));
    }

    public void killSandbox(String sandboxId) {
        NativeBridge.invoke("manager.kill_sandbox", args("sandbox_id", sandboxId));
    }

    public SandboxRenewResponse renewSandbox(String sandboxId, Duration timeout) {
        return SandboxRenewResponse.fromJson(NativeBridge.invoke("manager.renew_sandbox",
                args("sandbox_id", sandboxId, "seconds", timeout.toMillis() / 1000.0)));
    }

    public void pauseSandbox(String sandboxId) {
        NativeBridge.invoke("manager.pause_sandbox", args("sandbox_id", sandboxId));
    }

    public void resumeSandbox(String sandboxId) {
        NativeBridge.invoke("manager.resume_sandbox", args("sandbox_id", sandboxId));
    }

    public SandboxEndpoint getEndpoint(String sandboxId, int port) {
        return SandboxEndpoint.fromJson(NativeBridge.invoke("manager.get_endpoint",
                args("sandbox_id", sandboxId, "port", port)));
    }

    // ---- (1.1) templates ----

    /** Starts a template build; poll {@link #getTemplate} until its phase is Succeeded or Failed. */
    public TemplateInfo createTemplate(CreateTemplateRequest request) {
        Map<String, Object> a = request.toJson();
        a.put("manager", handle);
        return TemplateInfo.fromJson(NativeBridge.invoke("manager.create_template", a));
    }

    public TemplateInfo getTemplate(String templateId) {
        return TemplateInfo.fromJson(NativeBridge.invoke("manager.get_template", args("template_id", templateId)));
    }

    public PagedTemplateInfos listTemplates(TemplateFilter filter) {
        Map<String, Object> a = args();
        if (filter != null) {
            a.putAll(filter.toJson());
        }
        return PagedTemplateInfos.fromJson(NativeBridge.invoke("manager.list_templates", a));
    }

    public PagedTemplateInfos listTemplates() {
        return listTemplates(null);
    }

    /** Deletes the template; sandboxes created from it keep running. */
    public void deleteTemplate(String templateId) {
        NativeBridge.invoke("manager.delete_template", args("template_id", templateId));
    }

    public DiagnosticContent getDiagnosticLogs(String sandboxId, String scope) {
        return DiagnosticContent.fromJson(NativeBridge.invoke("manager.get_diagnostic_logs",
                args("sandbox_id", sandboxId, "scope", scope)));
    }

    public DiagnosticContent getDiagnosticEvents(String sandboxId, String scope) {
        return DiagnosticContent.fromJson(NativeBridge.invoke("manager.get_diagnostic_events",
                args("sandbox_id", sandboxId, "scope", scope)));
    }

    public SnapshotInfo createSnapshot(String sandboxId, String name) {
        return SnapshotInfo.fromJson(NativeBridge.invoke("manager.create_snapshot",
                args("sandbox_id", sandboxId, "name", name)));
    }

    public SnapshotInfo getSnapshot(String snapshotId) {
        return SnapshotInfo.fromJson(NativeBridge.invoke("manager.get_snapshot", args("snapshot_id", snapshotId)));
    }

    public PagedSnapshotInfos listSnapshots(SnapshotFilter filter) {
        Map<String, Object> a = args();
        if (filter != null) {
            a.putAll(filter.toJson());
        }
        return PagedSnapshotInfos.fromJson(NativeBridge.invoke("manager.list_snapshots", a));
    }

    public void deleteSnapshot(String snapshotId) {
        NativeBridge.invoke("manager.delete_snapshot", args("snapshot_id", snapshotId));
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            cleanable.clean();
        }
    }

    /** Builder of {@link SandboxManager}. */
    public static final class Builder {
        private ConnectionConfig connectionConfig;

        public Builder connectionConfig(ConnectionConfig config) {
            this.connectionConfig = config;
            return this;
        }

        public SandboxManager build() {
            return new SandboxManager(connectionConfig != null ? connectionConfig : ConnectionConfig.builder().build());
        }
    }
}
