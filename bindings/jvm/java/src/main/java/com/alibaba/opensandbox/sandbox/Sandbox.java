// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox;

import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxReadyTimeoutException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxError;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialProxyConfig;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.DiagnosticContent;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.NetworkPolicy;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.NetworkRule;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PlatformSpec;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PolicyStatus;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxEndpoint;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxImageSpec;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxLifecycle;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxInfo;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxMetrics;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxRenewResponse;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SnapshotInfo;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Volume;
import com.alibaba.opensandbox.sandbox.domain.services.Commands;
import com.alibaba.opensandbox.sandbox.domain.services.CredentialVault;
import com.alibaba.opensandbox.sandbox.domain.services.Diagnostics;
import com.alibaba.opensandbox.sandbox.domain.services.Filesystem;
import com.alibaba.opensandbox.sandbox.domain.services.IsolationService;
import com.alibaba.opensandbox.sandbox.domain.services.Metrics;
import com.alibaba.opensandbox.sandbox.domain.services.Pty;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * A sandbox: create with {@link #builder()}, attach to an existing one with
 * {@link #connector()}, resume a paused one with {@link #resumer()}. {@link #close()}
 * frees local resources only; {@link #kill()} deletes the remote sandbox.
 */
public final class Sandbox implements AutoCloseable {
    private final long handle;
    private final String id;
    private final ConnectionConfig connectionConfig;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Commands commands;
    private final Filesystem files;
    private final Metrics metrics;
    private final Pty pty;
    private final CredentialVault credentialVault;
    private final IsolationService isolation;
    private final Diagnostics diagnostics;
    /**
     * {@code "template"} when this handle created the sandbox from a template or the server's
     * {@code OPEN-SANDBOX-ORIGIN} header said so when it was opened, else null.
     */
    private final String origin;
    /** The builder's/connector's custom health check, used by {@link #checkReady}. */
    private volatile Predicate<Sandbox> customHealthCheck;

    private Sandbox(Object created, ConnectionConfig config) {
        this(created, config, null);
    }

    private Sandbox(Object created, ConnectionConfig config, String origin) {
        this(created, config, origin, Pty.DEFAULT_EXECD_PORT);
    }

    private Sandbox(Object created, ConnectionConfig config, String origin, int execdPort) {
        Map<?, ?> m = (Map<?, ?>) created;
        this.handle = Json.long_(m.get("handle"));
        this.id = Json.str(m.get("id"));
        this.connectionConfig = config;
        this.commands = new Commands(handle);
        this.files = new Filesystem(handle);
        this.metrics = new Metrics(handle);
        this.pty = new Pty(handle, config, execdPort);
        this.credentialVault = new CredentialVault(handle);
        this.isolation = new IsolationService(handle);
        this.diagnostics = new Diagnostics(config);
        Object reported = m.get("origin");
        this.origin = origin != null ? origin : "template".equals(reported) ? "template" : null;
    }

    public static Builder builder() {
        return new Builder();
    }

    public static Connector connector() {
        return new Connector();
    }

    public static Resumer resumer() {
        return new Resumer();
    }

    public String getId() {
        return id;
    }

    public ConnectionConfig getConnectionConfig() {
        return connectionConfig;
    }

    /**
     * (1.1) What backs this sandbox: {@code "template"} (created from a template, or so reported by
     * the server's {@code OPEN-SANDBOX-ORIGIN} header: its egress policy goes through the lifecycle
     * server and it has no Credential Vault), else {@code "unknown"}.
     */
    public String getOrigin() {
        return origin != null ? origin : "unknown";
    }

    /** Internal: the native handle. */
    public long nativeHandle() {
        return handle;
    }

    public Commands commands() {
        return commands;
    }

    public Filesystem files() {
        return files;
    }

    public Metrics metrics() {
        return metrics;
    }

    /**
     * The sandbox's Credential Vault (create the sandbox with
     * {@code credentialProxy(CredentialProxyConfig.enabled())}). As in the official SDK, a sandbox this
     * handle knows to be template-backed has no egress sidecar, so this throws {@link SandboxException}.
     */
    public CredentialVault credentialVault() {
        if ("template".equals(origin)) {
            throw new SandboxException("Credential Vault is not available for template-backed sandboxes: "
                    + "they have no sandbox-side egress sidecar.", null,
                    new SandboxError(SandboxError.UNEXPECTED_RESPONSE,
                            "Credential Vault is not available for template-backed sandboxes"), null);
        }
        return credentialVault;
    }

    /** Isolated sessions inside this sandbox. */
    public IsolationService isolation() {
        return isolation;
    }

    /** Server diagnostics (logs and events) by sandbox id and scope. */
    public Diagnostics diagnostics() {
        return diagnostics;
    }

    /**
     * File operations acting as Linux user {@code uid:gid} (execd's {@code /v1/filesystem/{uid}/{gid}}
     * routes): files are created as that user and permissions are checked as that user (403 when denied).
     */
    public Filesystem filesWithIdentity(long uid, long gid) {
        // 4294967295 is (uid_t) -1, "no change" to the kernel: never an identity.
        if (uid < 0 || gid < 0 || uid > 4294967294L || gid > 4294967294L) {
            throw new InvalidArgumentException("uid and gid must be in 0..4294967294, got " + uid + ":" + gid);
        }
        return new Filesystem(handle, Json.obj("identity", Json.obj("uid", uid, "gid", gid)));
    }

    /** Interactive PTY sessions and live background logs (extension over the official SDK). */
    public Pty pty() {
        return pty;
    }

    private Map<String, Object> args(Object... kv) {
        Map<String, Object> m = Json.obj(kv);
        m.put("sandbox", handle);
        return m;
    }

    public SandboxInfo getInfo() {
        return SandboxInfo.fromJson(NativeBridge.invoke("sandbox.get_info", args()));
    }

    public CompletableFuture<SandboxInfo> getInfoAsync() {
        return NativeBridge.invokeAsync("sandbox.get_info", args()).thenApply(SandboxInfo::fromJson);
    }

    public SandboxEndpoint getEndpoint(int port) {
        return SandboxEndpoint.fromJson(NativeBridge.invoke("sandbox.get_endpoint", args("port", port)));
    }

    /** A signed endpoint valid until {@code expires} (unix seconds). */
    public SandboxEndpoint getSignedEndpoint(int port, long expires) {
        return SandboxEndpoint.fromJson(NativeBridge.invoke("sandbox.get_signed_endpoint",
                args("port", port, "expires", expires)));
    }

    public SandboxMetrics getMetrics() {
        return metrics.getMetrics();
    }

    public DiagnosticContent getDiagnosticLogs(String scope) {
        return DiagnosticContent.fromJson(NativeBridge.invoke("sandbox.get_diagnostic_logs", args("scope", scope)));
    }

    public DiagnosticContent getDiagnosticEvents(String scope) {
        return DiagnosticContent.fromJson(NativeBridge.invoke("sandbox.get_diagnostic_events", args("scope", scope)));
    }

    /** Sets the expiry to now + {@code timeout} (computed on the client). */
    public SandboxRenewResponse renew(Duration timeout) {
        return SandboxRenewResponse.fromJson(NativeBridge.invoke("sandbox.renew",
                args("seconds", timeout.toMillis() / 1000.0)));
    }

    /** Merges metadata; a null value deletes the key. */
    public SandboxInfo patchMetadata(Map<String, String> patch) {
        return SandboxInfo.fromJson(NativeBridge.invoke("sandbox.patch_metadata", args("patch", patch)));
    }

    public SnapshotInfo createSnapshot(String name) {
        return SnapshotInfo.fromJson(NativeBridge.invoke("sandbox.create_snapshot", args("name", name)));
    }

    public SnapshotInfo createSnapshot() {
        return createSnapshot(null);
    }

    public NetworkPolicy getEgressPolicy() {
        return NetworkPolicy.fromJson(NativeBridge.invoke("sandbox.get_egress_policy", args()));
    }

    public PolicyStatus patchEgressRules(List<NetworkRule> rules) {
        return PolicyStatus.fromJson(NativeBridge.invoke("sandbox.patch_egress_rules",
                args("rules", Json.mapList(rules, NetworkRule::toJson))));
    }

    public PolicyStatus deleteEgressRules(List<String> targets) {
        return PolicyStatus.fromJson(NativeBridge.invoke("sandbox.delete_egress_rules", args("targets", targets)));
    }

    public void pause() {
        NativeBridge.invoke("sandbox.pause", args());
    }

    /** Resumes this (paused) sandbox and waits until it is ready again. */
    public void resume() {
        Map<?, ?> r = (Map<?, ?>) NativeBridge.invoke("sandbox.resume",
                Json.obj("connection", connectionConfig.nativeHandle(), "sandbox_id", id));
        NativeBridge.invoke("release", Json.obj("handle", r.get("handle")));
    }

    /** Deletes the remote sandbox. */
    public void kill() {
        NativeBridge.invoke("sandbox.kill", args());
    }

    public CompletableFuture<Void> killAsync() {
        return NativeBridge.invokeAsync("sandbox.kill", args()).thenApply(o -> null);
    }

    public boolean isHealthy() {
        Map<?, ?> r = (Map<?, ?>) NativeBridge.invoke("sandbox.is_healthy", args());
        return Boolean.TRUE.equals(r.get("healthy"));
    }

    /**
     * Pings execd once (no retries, bounded by the request timeout).
     *
     * @return {@code true} if execd answered, {@code false} on any failure
     */
    public boolean ping() {
        checkOpen();
        try {
            NativeBridge.invoke("sandbox.ping", args());
            return true;
        } catch (SandboxException e) {
            return false;
        }
    }

    /**
     * Waits until the sandbox passes its health check: the custom check given to the
     * builder/connector if any, else {@link #ping()}, polled every {@code pollingInterval}.
     *
     * @throws InvalidArgumentException if {@code pollingInterval} is not positive
     * @throws SandboxReadyTimeoutException if the check does not pass within {@code timeout}
     */
    public void checkReady(Duration timeout, Duration pollingInterval) {
        if (pollingInterval == null || pollingInterval.isNegative() || pollingInterval.isZero()) {
            throw new InvalidArgumentException("Ready polling interval must be positive, got: " + pollingInterval);
        }
        if (timeout == null || timeout.isNegative()) {
            throw new InvalidArgumentException("Ready timeout must not be negative, got: " + timeout);
        }
        checkOpen();
        Predicate<Sandbox> check = customHealthCheck;
        if (check == null) {
            NativeBridge.invoke("sandbox.wait_until_ready", Json.obj("sandbox", handle,
                    "timeout_s", timeout.toMillis() / 1000.0,
                    "polling_interval_s", pollingInterval.toMillis() / 1000.0));
            return;
        }
        if (!pollCustomHealth(this, check, timeout, pollingInterval)) {
            throw customTimeout(this, timeout);
        }
    }

    /**
     * The official OkHttp client provider. This package has no OkHttp stack (requests go
     * through the native core's connection pool), so there is no client to hand out.
     *
     * @throws UnsupportedOperationException always
     */
    public Object httpClientProvider() {
        throw new UnsupportedOperationException("Sandbox.httpClientProvider() is not supported: this SDK has no "
                + "OkHttp client; requests go through the native core's connection pool. Use getEndpoint(port) "
                + "(address + headers) with your own HTTP client to reach a sandbox port");
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new InvalidArgumentException("sandbox handle " + id + " is closed");
        }
    }

    /** Frees the local handle (idempotent); the remote sandbox keeps running. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            NativeBridge.invoke("release", Json.obj("handle", handle));
        }
    }

    private static Sandbox awaitCustomHealth(Sandbox sb, Predicate<Sandbox> check, Duration timeout,
            Duration interval, boolean killOnFailure) {
        sb.customHealthCheck = check;
        if (pollCustomHealth(sb, check, timeout, interval)) {
            return sb;
        }
        if (killOnFailure) {
            try {
                sb.kill();
            } catch (SandboxException ignored) {
                // best effort: the sandbox never became ready
            }
        }
        sb.close();
        throw customTimeout(sb, timeout);
    }

    /** Polls {@code check} until it passes (true) or {@code timeout} elapses (false). */
    private static boolean pollCustomHealth(Sandbox sb, Predicate<Sandbox> check, Duration timeout,
            Duration interval) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            boolean ok;
            try {
                ok = check.test(sb);
            } catch (RuntimeException e) {
                ok = false;
            }
            if (ok) {
                return true;
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
            try {
                Thread.sleep(Math.max(1, interval.toMillis()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SandboxException("interrupted while waiting for the sandbox", e, null, null);
            }
        }
    }

    private static SandboxReadyTimeoutException customTimeout(Sandbox sb, Duration timeout) {
        return (SandboxReadyTimeoutException) new SandboxReadyTimeoutException(
                "sandbox " + sb.getId() + " did not pass the custom health check within " + timeout
                        + " (domain " + sb.connectionConfig.getDomain() + ", useServerProxy="
                        + sb.connectionConfig.getUseServerProxy() + ")").withKind("ready_timeout");
    }

    private static ConnectionConfig orDefault(ConnectionConfig c) {
        return c != null ? c : ConnectionConfig.builder().build();
    }

    /** Builder that creates a sandbox ({@code build()} waits until it is ready). */
    public static final class Builder {
        private SandboxImageSpec image;
        private String snapshotId;
        private List<String> entrypoint;
        private final Map<String, String> resource = new LinkedHashMap<>();
        private boolean resourceSet;
        private final Map<String, String> env = new LinkedHashMap<>();
        private final Map<String, String> metadata = new LinkedHashMap<>();
        private final Map<String, String> extensions = new LinkedHashMap<>();
        private NetworkPolicy networkPolicy;
        private Duration timeout = Duration.ofSeconds(600);
        private Duration readyTimeout;
        private Duration pollingInterval;
        private Predicate<Sandbox> healthCheck;
        private boolean skipHealthCheck;
        private boolean secureAccess;
        private ConnectionConfig connectionConfig;
        private String templateId;
        private Map<String, String> resourceRequests;
        private SandboxLifecycle lifecycle;
        private final List<Volume> volumes = new ArrayList<>();
        private CredentialProxyConfig credentialProxy;
        private PlatformSpec platform;

        /** Runtime platform constraint (os/arch) for provisioning. */
        public Builder platform(PlatformSpec platform) {
            this.platform = platform;
            return this;
        }

        public Builder platform(Consumer<PlatformSpec.Builder> configure) {
            PlatformSpec.Builder b = PlatformSpec.builder();
            configure.accept(b);
            this.platform = b.build();
            return this;
        }

        /**
         * Creates the sandbox from a built template ({@code SandboxManager.createTemplate}); the image,
         * entrypoint and env come from the template unless set here.
         */
        public Builder templateId(String templateId) {
            if (templateId == null || templateId.trim().isEmpty()) {
                throw new InvalidArgumentException("Template id cannot be blank");
            }
            this.templateId = templateId;
            return this;
        }

        /** Guaranteed minimum resources (Burstable QoS), next to the limits of {@code resource}. */
        public Builder resourceRequests(Map<String, String> resourceRequests) {
            this.resourceRequests = new LinkedHashMap<>(resourceRequests);
            return this;
        }

        public Builder resourceRequests(Consumer<Map<String, String>> configure) {
            Map<String, String> m = new LinkedHashMap<>();
            configure.accept(m);
            this.resourceRequests = m;
            return this;
        }

        /** Hooks execd runs before the entrypoint ({@code preStart}) and on a schedule ({@code periodic}). */
        public Builder lifecycle(SandboxLifecycle lifecycle) {
            this.lifecycle = lifecycle;
            return this;
        }

        public Builder lifecycle(Consumer<SandboxLifecycle.Builder> configure) {
            SandboxLifecycle.Builder b = SandboxLifecycle.builder();
            configure.accept(b);
            this.lifecycle = b.build();
            return this;
        }

        public Builder volume(Volume volume) {
            this.volumes.add(volume);
            return this;
        }

        public Builder volumes(List<Volume> volumes) {
            this.volumes.addAll(volumes);
            return this;
        }

        /** Starts the credential proxy that {@code sandbox.credentialVault()} configures. */
        public Builder credentialProxy(CredentialProxyConfig credentialProxy) {
            this.credentialProxy = credentialProxy;
            return this;
        }

        /** Enables or disables the transparent Credential Vault proxy. */
        public Builder credentialProxyEnabled(boolean enabled) {
            this.credentialProxy = CredentialProxyConfig.builder().enabled(enabled).build();
            return this;
        }

        public Builder credentialProxyEnabled() {
            return credentialProxyEnabled(true);
        }

        public Builder image(String image) {
            this.image = SandboxImageSpec.builder().image(image).build();
            return this;
        }

        public Builder imageSpec(SandboxImageSpec spec) {
            this.image = spec;
            return this;
        }

        public Builder snapshotId(String snapshotId) {
            this.snapshotId = snapshotId;
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
            this.resource.clear();
            this.resource.putAll(resource);
            this.resourceSet = true;
            return this;
        }

        public Builder resource(Consumer<Map<String, String>> configure) {
            configure.accept(this.resource);
            this.resourceSet = true;
            return this;
        }

        public Builder env(String key, String value) {
            this.env.put(key, value);
            return this;
        }

        public Builder env(Map<String, String> env) {
            this.env.putAll(env);
            return this;
        }

        public Builder env(Consumer<Map<String, String>> configure) {
            configure.accept(this.env);
            return this;
        }

        public Builder metadata(String key, String value) {
            this.metadata.put(key, value);
            return this;
        }

        public Builder metadata(Map<String, String> metadata) {
            this.metadata.putAll(metadata);
            return this;
        }

        public Builder metadata(Consumer<Map<String, String>> configure) {
            configure.accept(this.metadata);
            return this;
        }

        public Builder networkPolicy(NetworkPolicy policy) {
            this.networkPolicy = policy;
            return this;
        }

        public Builder networkPolicy(Consumer<NetworkPolicy.Builder> configure) {
            NetworkPolicy.Builder b = NetworkPolicy.builder();
            configure.accept(b);
            this.networkPolicy = b.build();
            return this;
        }

        public Builder secureAccess() {
            this.secureAccess = true;
            return this;
        }

        public Builder extension(String key, String value) {
            this.extensions.put(key, value);
            return this;
        }

        public Builder extensions(Map<String, String> extensions) {
            this.extensions.putAll(extensions);
            return this;
        }

        /** Time to live; {@code null} = manual cleanup (no expiry). Default 10 minutes. */
        public Builder timeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        public Builder manualCleanup() {
            this.timeout = null;
            return this;
        }

        public Builder readyTimeout(Duration readyTimeout) {
            this.readyTimeout = readyTimeout;
            return this;
        }

        public Builder healthCheckPollingInterval(Duration interval) {
            this.pollingInterval = interval;
            return this;
        }

        /** A custom readiness check replacing the execd ping. */
        public Builder healthCheck(Predicate<Sandbox> check) {
            this.healthCheck = check;
            return this;
        }

        public Builder skipHealthCheck() {
            this.skipHealthCheck = true;
            return this;
        }

        public Builder skipHealthCheck(boolean skip) {
            this.skipHealthCheck = skip;
            return this;
        }

        public Builder connectionConfig(ConnectionConfig config) {
            this.connectionConfig = config;
            return this;
        }

        private Map<String, Object> args(ConnectionConfig cfg) {
            if (templateId != null && snapshotId != null) {
                throw new InvalidArgumentException("templateId and snapshotId cannot both be set");
            }
            if (templateId == null && (image == null) == (snapshotId == null)) {
                throw new InvalidArgumentException("exactly one of image or snapshotId must be set");
            }
            Map<String, Object> a = Json.obj("connection", cfg.nativeHandle(),
                    "image", image == null ? null : image.getImage(),
                    "snapshot_id", snapshotId,
                    "env", env, "metadata", metadata, "extensions", extensions,
                    "skip_health_check", skipHealthCheck || healthCheck != null,
                    "secure_access", secureAccess);
            a.put("timeout_s", timeout == null ? null : timeout.toMillis() / 1000.0);
            if (entrypoint != null) {
                a.put("entrypoint", entrypoint);
            }
            if (resourceSet) {
                a.put("resource", resource);
            }
            if (networkPolicy != null) {
                a.put("network_policy", networkPolicy.toJson());
            }
            if (readyTimeout != null) {
                a.put("ready_timeout_s", readyTimeout.toMillis() / 1000.0);
            }
            if (pollingInterval != null) {
                a.put("health_check_polling_interval_s", pollingInterval.toMillis() / 1000.0);
            }
            if (templateId != null) {
                a.put("template_id", templateId);
            }
            if (resourceRequests != null) {
                a.put("resource_requests", resourceRequests);
            }
            if (lifecycle != null && !lifecycle.isEmpty()) {
                a.put("lifecycle", lifecycle.toJson());
            }
            if (!volumes.isEmpty()) {
                a.put("volumes", Json.mapList(volumes, Volume::toJson));
            }
            if (credentialProxy != null) {
                a.put("credential_proxy", credentialProxy.toJson());
            }
            if (platform != null) {
                a.put("platform", platform.toJson());
            }
            if (image != null && image.getAuth() != null) {
                a.put("image_auth", image.getAuth().toJson());
            }
            return a;
        }

        private Sandbox finish(Object created, ConnectionConfig cfg) {
            Sandbox sb = new Sandbox(created, cfg, templateId != null ? "template" : null);
            sb.customHealthCheck = healthCheck;
            if (healthCheck != null && !skipHealthCheck) {
                return awaitCustomHealth(sb, healthCheck, readyTimeout != null ? readyTimeout : Duration.ofSeconds(30),
                        pollingInterval != null ? pollingInterval : Duration.ofMillis(200), true);
            }
            return sb;
        }

        /** Creates the sandbox and waits until it is ready. */
        public Sandbox build() {
            ConnectionConfig cfg = orDefault(connectionConfig);
            return finish(NativeBridge.invoke("sandbox.create", args(cfg)), cfg);
        }

        /** As {@link #build()}, without blocking the caller (a custom health check still polls on a pool thread). */
        public CompletableFuture<Sandbox> buildAsync() {
            ConnectionConfig cfg = orDefault(connectionConfig);
            return NativeBridge.invokeAsync("sandbox.create", args(cfg)).thenApplyAsync(o -> finish(o, cfg));
        }
    }

    /** Connects to an existing sandbox. */
    public static class Connector {
        protected String sandboxId;
        protected ConnectionConfig connectionConfig;
        protected Duration timeout;
        protected Duration pollingInterval;
        protected Predicate<Sandbox> healthCheck;
        protected boolean skipHealthCheck;
        protected int execdPort = Pty.DEFAULT_EXECD_PORT;

        public Connector sandboxId(String sandboxId) {
            this.sandboxId = sandboxId;
            return this;
        }

        public Connector connectionConfig(ConnectionConfig config) {
            this.connectionConfig = config;
            return this;
        }

        public Connector connectTimeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        public Connector healthCheckPollingInterval(Duration interval) {
            this.pollingInterval = interval;
            return this;
        }

        public Connector healthCheck(Predicate<Sandbox> check) {
            this.healthCheck = check;
            return this;
        }

        public Connector skipHealthCheck() {
            this.skipHealthCheck = true;
            return this;
        }

        public Connector skipHealthCheck(boolean skip) {
            this.skipHealthCheck = skip;
            return this;
        }

        /**
         * (1.1) The port execd listens on inside the sandbox (default 44772): commands, files,
         * code, metrics and PTY then go to that port's endpoint.
         */
        public Connector execdPort(int port) {
            if (port < 1 || port > 65535) {
                throw new InvalidArgumentException("execdPort must be in 1..65535, got " + port);
            }
            this.execdPort = port;
            return this;
        }

        Sandbox open(String op, String timeoutArg) {
            if (sandboxId == null || sandboxId.isEmpty()) {
                throw new InvalidArgumentException("sandboxId is required");
            }
            ConnectionConfig cfg = orDefault(connectionConfig);
            if (execdPort != Pty.DEFAULT_EXECD_PORT) {
                return openOnPort(op, cfg);
            }
            Map<String, Object> a = Json.obj("connection", cfg.nativeHandle(), "sandbox_id", sandboxId,
                    "skip_health_check", skipHealthCheck || healthCheck != null);
            if (timeout != null) {
                a.put(timeoutArg, timeout.toMillis() / 1000.0);
            }
            if (pollingInterval != null) {
                a.put("health_check_polling_interval_s", pollingInterval.toMillis() / 1000.0);
            }
            Sandbox sb = new Sandbox(NativeBridge.invoke(op, a), cfg);
            sb.customHealthCheck = healthCheck;
            if (healthCheck != null && !skipHealthCheck) {
                return awaitCustomHealth(sb, healthCheck, timeout != null ? timeout : Duration.ofSeconds(30),
                        pollingInterval != null ? pollingInterval : Duration.ofMillis(200), false);
            }
            return sb;
        }

        /**
         * A non-default execd port: resume first when resuming, resolve that port's endpoint,
         * open a handle over it (labelled with the sandbox id, so lifecycle calls work as
         * usual), then wait for execd unless the health check is skipped.
         */
        private Sandbox openOnPort(String op, ConnectionConfig cfg) {
            if ("sandbox.resume".equals(op)) {
                NativeBridge.invoke("manager.resume_sandbox",
                        Json.obj("connection", cfg.nativeHandle(), "sandbox_id", sandboxId));
            }
            Map<?, ?> ep = (Map<?, ?>) NativeBridge.invoke("manager.get_endpoint",
                    Json.obj("connection", cfg.nativeHandle(), "sandbox_id", sandboxId, "port", execdPort));
            Object opened = NativeBridge.invoke("sandbox.open_endpoints", Json.obj("connection", cfg.nativeHandle(),
                    "id", sandboxId, "execd", Json.obj("endpoint", ep.get("endpoint"), "headers", ep.get("headers"))));
            String origin = "template".equals(ep.get("origin")) ? "template" : null;
            Sandbox sb = new Sandbox(opened, cfg, origin, execdPort);
            sb.customHealthCheck = healthCheck;
            Duration wait = timeout != null ? timeout : Duration.ofSeconds(30);
            Duration every = pollingInterval != null ? pollingInterval : Duration.ofMillis(200);
            if (skipHealthCheck) {
                return sb;
            }
            if (healthCheck != null) {
                return awaitCustomHealth(sb, healthCheck, wait, every, false);
            }
            try {
                NativeBridge.invoke("sandbox.wait_until_ready", Json.obj("sandbox", sb.handle,
                        "timeout_s", wait.toMillis() / 1000.0, "polling_interval_s", every.toMillis() / 1000.0));
            } catch (RuntimeException e) {
                sb.close();
                throw e;
            }
            return sb;
        }

        public Sandbox connect() {
            return open("sandbox.connect", "connect_timeout_s");
        }
    }

    /** Resumes a paused sandbox and waits until it is ready again. */
    public static final class Resumer extends Connector {
        @Override
        public Resumer sandboxId(String sandboxId) {
            super.sandboxId(sandboxId);
            return this;
        }

        @Override
        public Resumer connectionConfig(ConnectionConfig config) {
            super.connectionConfig(config);
            return this;
        }

        @Override
        public Resumer execdPort(int port) {
            super.execdPort(port);
            return this;
        }

        public Resumer resumeTimeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        @Override
        public Resumer skipHealthCheck() {
            super.skipHealthCheck();
            return this;
        }

        public Sandbox resume() {
            return open("sandbox.resume", "resume_timeout_s");
        }
    }
}
