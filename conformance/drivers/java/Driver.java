// Conformance driver of the JVM package: runs conformance steps through the public
// Java API of com.alibaba.opensandbox:sandbox (conformance/PROTOCOL.md).
import com.alibaba.opensandbox.codeinterpreter.CodeInterpreter;
import com.alibaba.opensandbox.codeinterpreter.Codes;
import com.alibaba.opensandbox.codeinterpreter.RunCodeRequest;
import com.alibaba.opensandbox.sandbox.Sandbox;
import com.alibaba.opensandbox.sandbox.SandboxManager;
import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxApiException;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.domain.models.execd.code.CodeContext;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.Execution;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.ExecutionHandlers;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.ExecutionResult;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.OutputMessage;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.RunCommandRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.RunInSessionRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.ContentReplaceEntry;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.EntryInfo;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.MoveEntry;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.ReplaceResult;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.SearchEntry;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.SetPermissionEntry;
import com.alibaba.opensandbox.sandbox.domain.models.execd.filesystem.WriteEntry;
import com.alibaba.opensandbox.sandbox.domain.models.execd.pty.LogChunk;
import com.alibaba.opensandbox.sandbox.domain.models.execd.pty.PtyRead;
import com.alibaba.opensandbox.sandbox.domain.models.execd.pty.PtySessionStatus;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.BindMount;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.CreateIsolatedSessionRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.EnvPassthroughSpec;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedOverlaySpec;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedRunRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedSessionSummary;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedWorkspaceSpec;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CreateTemplateRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Credential;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialAuth;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialBinding;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialBindingMetadata;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialBindingMutationSet;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialMatch;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialMetadata;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialMutationSet;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialProxyConfig;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialSubstitution;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CredentialVaultPatchRequest;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.CustomHeaderEntry;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Host;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.InlineCredentialSource;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.LifecycleHook;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.NetworkPolicy;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.OSSFS;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PVC;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PlatformSpec;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxImageSpec;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.PeriodicLifecycleHook;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxLifecycle;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplateFilter;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplateFormat;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.TemplateReadiness;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.Volume;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.NetworkRule;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxFilter;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxInfo;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SandboxMetrics;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.SnapshotFilter;
import com.alibaba.opensandbox.sandbox.domain.services.Filesystem;
import com.alibaba.opensandbox.sandbox.domain.services.IsolationSession;
import com.alibaba.opensandbox.sandbox.domain.services.Pty;
import com.alibaba.opensandbox.sandbox.domain.services.PtyConnection;
import com.alibaba.opensandbox.sandbox.domain.pool.AcquirePolicy;
import com.alibaba.opensandbox.sandbox.domain.pool.IdleEntry;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolCreationSpec;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolSnapshot;
import com.alibaba.opensandbox.sandbox.domain.pool.PoolStateStore;
import com.alibaba.opensandbox.sandbox.infrastructure.pool.InMemoryPoolStateStore;
import com.alibaba.opensandbox.sandbox.infrastructure.pool.RedisPoolStateStore;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.pool.SandboxPool;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

public final class Driver {
    static final PrintStream OUT = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);

    static final class DriverError extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String kind;

        DriverError(String kind, String message) {
            super(message);
            this.kind = kind;
        }
    }

    final ConnectionConfig base = ConnectionConfig.builder().build();
    SandboxManager manager;
    final Map<String, Sandbox> sandboxes = new HashMap<>();
    final Map<String, Object[]> runs = new HashMap<>();
    final Map<String, PtyConnection> ptys = new HashMap<>();
    final Map<String, SandboxPool> pools = new HashMap<>();
    final Map<String, redis.clients.jedis.UnifiedJedis> redisClients = new HashMap<>();
    int nextHandle;

    // ---- argument helpers ----

    static Map<?, ?> map(Object o) {
        return o instanceof Map ? (Map<?, ?>) o : Collections.emptyMap();
    }

    static String str(Map<?, ?> a, String k) {
        Object v = a.get(k);
        return v == null ? null : v.toString();
    }

    static String req(Map<?, ?> a, String k) {
        String v = str(a, k);
        if (v == null) {
            throw new DriverError("driver_error", "argument " + k + " is required");
        }
        return v;
    }

    static Long lng(Map<?, ?> a, String k) {
        Object v = a.get(k);
        return v instanceof Number ? ((Number) v).longValue() : null;
    }

    static Integer integer(Map<?, ?> a, String k) {
        Object v = a.get(k);
        return v instanceof Number ? ((Number) v).intValue() : null;
    }

    static boolean bool(Map<?, ?> a, String k) {
        return Boolean.TRUE.equals(a.get(k));
    }

    static Duration secs(Map<?, ?> a, String k) {
        Object v = a.get(k);
        return v instanceof Number ? Duration.ofMillis((long) (((Number) v).doubleValue() * 1000)) : null;
    }

    @SuppressWarnings("unchecked")
    static Map<String, String> strMap(Map<?, ?> a, String k) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map(a.get(k)).entrySet()) {
            out.put(String.valueOf(e.getKey()), e.getValue() == null ? null : e.getValue().toString());
        }
        return out;
    }

    static List<String> strList(Map<?, ?> a, String k) {
        List<String> out = new ArrayList<>();
        if (a.get(k) instanceof List) {
            for (Object o : (List<?>) a.get(k)) {
                out.add(String.valueOf(o));
            }
        }
        return out;
    }

    static List<Map<?, ?>> objects(Map<?, ?> a, String k) {
        List<Map<?, ?>> out = new ArrayList<>();
        if (a.get(k) instanceof List) {
            for (Object o : (List<?>) a.get(k)) {
                out.add(map(o));
            }
        }
        return out;
    }

    // ---- SDK objects ----

    ConnectionConfig config(Map<?, ?> a) {
        Map<?, ?> c = map(a.get("connection"));
        if (!a.containsKey("connection")) {
            return base;
        }
        ConnectionConfig.Builder b = ConnectionConfig.builder();
        if (c.containsKey("domain")) {
            b.domain(str(c, "domain"));
        }
        if (c.containsKey("api_key")) {
            b.apiKey(str(c, "api_key"));
        }
        b.headers(strMap(c, "headers"));
        if (secs(c, "request_timeout_s") != null) {
            b.requestTimeout(secs(c, "request_timeout_s"));
        }
        b.useServerProxy(bool(c, "use_server_proxy"));
        return b.build();
    }

    SandboxManager manager(Map<?, ?> a) {
        if (a.containsKey("connection")) {
            return SandboxManager.builder().connectionConfig(config(a)).build();
        }
        if (manager == null) {
            manager = SandboxManager.builder().connectionConfig(base).build();
        }
        return manager;
    }

    Sandbox sandbox(Map<?, ?> a) {
        String id = req(a, "sandbox");
        if (a.containsKey("connection")) {
            return Sandbox.connector().sandboxId(id).connectionConfig(config(a)).skipHealthCheck().connect();
        }
        Sandbox s = sandboxes.get(id);
        if (s == null) {
            s = Sandbox.connector().sandboxId(id).connectionConfig(base).skipHealthCheck().connect();
            sandboxes.put(id, s);
        }
        return s;
    }

    Object keep(Map<?, ?> a, Sandbox s) {
        if (!a.containsKey("connection")) {
            Sandbox old = sandboxes.put(s.getId(), s);
            if (old != null && old != s) {
                old.close();
            }
        }
        return Json.obj("id", s.getId());
    }

    // ---- results ----

    static Object info(SandboxInfo i) {
        return i == null ? null : i.toJson();
    }

    static Object entry(EntryInfo e) {
        return Json.obj("path", e.getPath(), "type", e.getType(), "mode", e.getMode(), "owner", e.getOwner(),
                "group", e.getGroup(), "size", e.getSize(),
                "modified_at", e.getModifiedAt() == null ? null : e.getModifiedAt().toString(),
                "created_at", e.getCreatedAt() == null ? null : e.getCreatedAt().toString());
    }

    static Object entries(List<EntryInfo> l) {
        List<Object> out = new ArrayList<>();
        for (EntryInfo e : l) {
            out.add(entry(e));
        }
        return out;
    }

    static List<String> texts(List<OutputMessage> l) {
        List<String> out = new ArrayList<>();
        for (OutputMessage m : l) {
            out.add(m.getText());
        }
        return out;
    }

    static Map<String, Object> execution(Execution e, Recorder r) {
        List<Object> results = new ArrayList<>();
        for (ExecutionResult x : e.getResult()) {
            results.add(Json.obj("text", x.getText()));
        }
        Map<String, Object> m = Json.obj("id", e.getId(), "exit_code", e.getExitCode(),
                "stdout", texts(e.getLogs().getStdout()), "stderr", texts(e.getLogs().getStderr()),
                "results", results,
                "error", e.getError() == null ? null : Json.obj("name", e.getError().getName(),
                        "value", e.getError().getValue(), "traceback", e.getError().getTraceback()),
                "complete", e.getComplete() == null ? null
                        : Json.obj("execution_time_ms", e.getComplete().getExecutionTimeInMillis()),
                "execution_count", e.getExecutionCount());
        if (r != null) {
            r.extra(m);
        }
        return m;
    }

    /** Handlers that record callbacks in order and/or digest stdout. */
    static final class Recorder {
        final boolean record;
        final MessageDigest sha;
        final List<Object> events = Collections.synchronizedList(new ArrayList<>());
        final CompletableFuture<String> init = new CompletableFuture<>();
        /** The request's {@code skip_accumulation} (or digest): the handlers' own option. */
        boolean skip;
        long bytes;
        long lines;

        Recorder(boolean record, boolean digest) {
            this.record = record;
            this.skip = digest;
            try {
                this.sha = digest ? MessageDigest.getInstance("SHA-256") : null;
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }

        void add(Object... kv) {
            if (record) {
                events.add(Json.obj(kv));
            }
        }

        ExecutionHandlers handlers() {
            return ExecutionHandlers.builder()
                    .onInit(id -> {
                        init.complete(id);
                        add("type", "init", "id", id);
                    })
                    .onStdout(m -> {
                        if (sha != null) {
                            // The output's bytes whatever the framing: a line-framed text
                            // gets its newline back, a kept one already ends with it.
                            String t = m.getText();
                            byte[] b = (t.endsWith("\n") ? t : t + "\n").getBytes(StandardCharsets.UTF_8);
                            sha.update(b);
                            bytes += b.length;
                            for (byte c : b) {
                                if (c == '\n') {
                                    lines++;
                                }
                            }
                        } else {
                            add("type", "stdout", "text", m.getText());
                        }
                    })
                    .onStderr(m -> add("type", "stderr", "text", m.getText()))
                    .onResult(r -> add("type", "result", "text", r.getText()))
                    .onError(e -> add("type", "error", "name", e.getName(), "value", e.getValue()))
                    .onExecutionComplete(c -> add("type", "execution_complete"))
                    .skipAccumulation(skip)
                    .build();
        }

        void extra(Map<String, Object> m) {
            if (record) {
                m.put("events", new ArrayList<>(events));
            }
            if (sha != null) {
                StringBuilder hex = new StringBuilder();
                for (byte b : sha.digest()) {
                    hex.append(String.format("%02x", b));
                }
                m.put("stdout", Collections.emptyList());
                m.put("stdout_digest", Json.obj("sha256", hex.toString(), "bytes", bytes, "lines", lines));
            }
        }
    }

    RunCommandRequest commandRequest(Map<?, ?> a, Recorder r) {
        RunCommandRequest.Builder b = RunCommandRequest.builder().command(req(a, "command"))
                .background(bool(a, "background")).workingDirectory(str(a, "working_directory"))
                .uid(integer(a, "uid")).gid(integer(a, "gid")).envs(strMap(a, "envs"));
        if (lng(a, "timeout_ms") != null) {
            b.timeout(Duration.ofMillis(lng(a, "timeout_ms")));
        }
        if (r != null) {
            b.handlers(r.handlers());
        } else if (bool(a, "skip_accumulation")) {
            // No callbacks: the option alone, as a user keeping no output would write it.
            b.handlers(ExecutionHandlers.builder().skipAccumulation().build());
        }
        return b.build();
    }

    /** A recorder taking the request's {@code skip_accumulation}. */
    static Recorder recorder(Map<?, ?> a, boolean record, boolean digest) {
        Recorder r = new Recorder(record, digest);
        r.skip = digest || bool(a, "skip_accumulation");
        return r;
    }

    Object start(CompletableFuture<Execution> run, Recorder r) throws Exception {
        CompletableFuture<Object> first = CompletableFuture.anyOf(r.init, run);
        try {
            first.get(30, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new DriverError("driver_error", "no init event within 30 s");
        }
        if (!r.init.isDone()) {
            run.join(); // throws the run's error
            throw new DriverError("driver_error", "the run ended without an init event");
        }
        String handle = "run-" + (++nextHandle);
        runs.put(handle, new Object[] {run, r});
        return Json.obj("handle", handle, "id", r.init.get());
    }

    CodeContext codeTarget(Map<?, ?> a) {
        if (str(a, "context_id") != null) {
            return CodeContext.builder().id(str(a, "context_id")).language(str(a, "language")).build();
        }
        return CodeContext.builder().language(a.get("language") == null ? "python" : str(a, "language")).build();
    }

    static Object ctx(CodeContext c) {
        return Json.obj("id", c.getId(), "language", c.getLanguage());
    }

    WriteEntry writeEntry(Map<?, ?> e) {
        Object data;
        Map<?, ?> gen = map(e.get("data_gen"));
        if (e.get("data_gen") != null) {
            byte[] unit = req(gen, "text").getBytes(StandardCharsets.UTF_8);
            long times = lng(gen, "times");
            data = new InputStream() {
                long left = times;
                int pos;

                @Override
                public int read() {
                    byte[] one = new byte[1];
                    return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
                }

                @Override
                public int read(byte[] b, int off, int len) {
                    if (left == 0 || unit.length == 0) {
                        return -1;
                    }
                    int n = 0;
                    while (n < len && left > 0) {
                        int k = Math.min(len - n, unit.length - pos);
                        System.arraycopy(unit, pos, b, off + n, k);
                        n += k;
                        pos += k;
                        if (pos == unit.length) {
                            pos = 0;
                            left--;
                        }
                    }
                    return n;
                }
            };
        } else if (e.get("data_b64") != null) {
            data = Base64.getDecoder().decode(str(e, "data_b64"));
        } else {
            data = e.get("data") == null ? "" : str(e, "data");
        }
        WriteEntry.Builder b = WriteEntry.builder().path(req(e, "path")).data(data).owner(str(e, "owner")).group(str(e, "group"));
        if (integer(e, "mode") != null) {
            b.mode(integer(e, "mode"));
        }
        return b.build();
    }

    static String hex(byte[] d) {
        StringBuilder sb = new StringBuilder();
        for (byte b : d) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    @SuppressWarnings("unchecked")
    Object dispatch(String op, Map<?, ?> a) throws Exception {
        switch (op) {
            case "sandbox.create": {
                Sandbox.Builder b = Sandbox.builder().connectionConfig(config(a));
                if (str(a, "image") != null) {
                    Map<?, ?> auth = map(a.get("image_auth"));
                    b.imageSpec(a.get("image_auth") == null ? SandboxImageSpec.builder().image(str(a, "image")).build()
                            : SandboxImageSpec.builder().image(str(a, "image")).auth(req(auth, "username"), req(auth, "password")).build());
                }
                if (str(a, "snapshot_id") != null) {
                    b.snapshotId(str(a, "snapshot_id"));
                }
                if (a.containsKey("entrypoint")) {
                    b.entrypoint(strList(a, "entrypoint"));
                }
                if (a.containsKey("timeout_s")) {
                    b.timeout(secs(a, "timeout_s"));
                }
                if (secs(a, "ready_timeout_s") != null) {
                    b.readyTimeout(secs(a, "ready_timeout_s"));
                }
                b.env(strMap(a, "env")).metadata(strMap(a, "metadata")).extensions(strMap(a, "extensions"));
                if (a.containsKey("resource")) {
                    b.resource(strMap(a, "resource"));
                }
                if (a.get("network_policy") != null) {
                    Map<?, ?> p = map(a.get("network_policy"));
                    NetworkPolicy.Builder pb = NetworkPolicy.builder().defaultAction(str(p, "default_action"));
                    for (Map<?, ?> r : objects(p, "egress")) {
                        pb.addEgress(NetworkRule.builder().action(str(r, "action")).target(str(r, "target")).build());
                    }
                    b.networkPolicy(pb.build());
                }
                b.skipHealthCheck(bool(a, "skip_health_check"));
                create11(a, b);
                return keep(a, b.build());
            }
            case "sandbox.connect": {
                Sandbox.Connector c = Sandbox.connector().sandboxId(req(a, "sandbox_id")).connectionConfig(config(a))
                        .skipHealthCheck(bool(a, "skip_health_check"));
                if (secs(a, "connect_timeout_s") != null) {
                    c.connectTimeout(secs(a, "connect_timeout_s"));
                }
                return keep(a, c.connect());
            }
            case "sandbox.resume": {
                Sandbox.Resumer r = Sandbox.resumer().sandboxId(req(a, "sandbox_id")).connectionConfig(config(a));
                if (secs(a, "resume_timeout_s") != null) {
                    r.resumeTimeout(secs(a, "resume_timeout_s"));
                }
                return keep(a, r.resume());
            }
            case "sandbox.get_info":
                return info(sandbox(a).getInfo());
            case "sandbox.is_healthy":
                return Json.obj("healthy", sandbox(a).isHealthy());
            case "sandbox.renew": {
                var r = sandbox(a).renew(secs(a, "seconds"));
                return Json.obj("expires_at", r.getExpiresAt() == null ? null : r.getExpiresAt().toString());
            }
            case "sandbox.patch_metadata":
                return info(sandbox(a).patchMetadata(strMap(a, "patch")));
            case "sandbox.pause":
                sandbox(a).pause();
                return null;
            case "sandbox.kill": {
                Sandbox s = sandbox(a);
                s.kill();
                sandboxes.remove(s.getId());
                s.close();
                return null;
            }
            case "sandbox.get_endpoint":
                return sandbox(a).getEndpoint(integer(a, "port")).toJson();
            case "sandbox.get_metrics":
                return sandbox(a).getMetrics().toJson();
            case "sandbox.create_snapshot":
                return sandbox(a).createSnapshot(str(a, "name")).toJson();
            case "sandbox.get_egress_policy":
                return sandbox(a).getEgressPolicy().toJson();
            case "sandbox.patch_egress_rules": {
                List<NetworkRule> rules = new ArrayList<>();
                for (Map<?, ?> r : objects(a, "rules")) {
                    rules.add(NetworkRule.builder().action(str(r, "action")).target(str(r, "target")).build());
                }
                return sandbox(a).patchEgressRules(rules).toJson();
            }
            case "sandbox.delete_egress_rules":
                return sandbox(a).deleteEgressRules(strList(a, "targets")).toJson();
            case "sandbox.get_diagnostic_logs":
                return sandbox(a).getDiagnosticLogs(req(a, "scope")).toJson();
            case "sandbox.get_diagnostic_events":
                return sandbox(a).getDiagnosticEvents(req(a, "scope")).toJson();
            case "manager.list_sandbox_infos": {
                var page = manager(a).listSandboxInfos(SandboxFilter.builder().states(strList(a, "states"))
                        .metadata(strMap(a, "metadata")).page(integer(a, "page")).pageSize(integer(a, "page_size")).build());
                return page.toJson();
            }
            case "manager.get_sandbox_info":
                return info(manager(a).getSandboxInfo(req(a, "sandbox_id")));
            case "manager.kill_sandbox":
                manager(a).killSandbox(req(a, "sandbox_id"));
                return null;
            case "manager.pause_sandbox":
                manager(a).pauseSandbox(req(a, "sandbox_id"));
                return null;
            case "manager.resume_sandbox":
                manager(a).resumeSandbox(req(a, "sandbox_id"));
                return null;
            case "manager.renew_sandbox": {
                var r = manager(a).renewSandbox(req(a, "sandbox_id"), secs(a, "seconds"));
                return Json.obj("expires_at", r.getExpiresAt() == null ? null : r.getExpiresAt().toString());
            }
            case "manager.patch_sandbox_metadata":
                return info(manager(a).patchSandboxMetadata(req(a, "sandbox_id"), strMap(a, "patch")));
            case "manager.get_endpoint":
                return manager(a).getEndpoint(req(a, "sandbox_id"), integer(a, "port")).toJson();
            case "manager.get_snapshot":
                return manager(a).getSnapshot(req(a, "snapshot_id")).toJson();
            case "manager.delete_snapshot":
                manager(a).deleteSnapshot(req(a, "snapshot_id"));
                return null;
            case "manager.list_snapshots":
                return manager(a).listSnapshots(SnapshotFilter.builder().sandboxId(str(a, "sandbox_id"))
                        .states(strList(a, "states")).page(integer(a, "page")).pageSize(integer(a, "page_size")).build())
                        .toJson();
            case "commands.run": {
                Recorder r = bool(a, "handlers") || bool(a, "digest") ? recorder(a, bool(a, "handlers"), bool(a, "digest")) : null;
                return execution(sandbox(a).commands().run(commandRequest(a, r)), r);
            }
            case "commands.start": {
                Recorder r = recorder(a, bool(a, "handlers"), false);
                return start(sandbox(a).commands().runAsync(commandRequest(a, r)), r);
            }
            case "execution.wait": {
                Object[] run = runs.remove(req(a, "handle"));
                if (run == null) {
                    throw new DriverError("driver_error", "no run with handle " + str(a, "handle"));
                }
                Execution e;
                try {
                    e = ((CompletableFuture<Execution>) run[0]).join();
                } catch (CancellationException c) {
                    throw new DriverError("cancelled", "the run was cancelled: " + c.getMessage());
                }
                Recorder r = (Recorder) run[1];
                return execution(e, r.record ? r : null);
            }
            case "execution.cancel": {
                // Java's own cancellation: cancel(true) on the future of runAsync.
                Object[] run = runs.get(req(a, "handle"));
                if (run == null) {
                    throw new DriverError("driver_error", "no run with handle " + str(a, "handle"));
                }
                ((CompletableFuture<?>) run[0]).cancel(true);
                return null;
            }
            case "commands.interrupt":
                sandbox(a).commands().interrupt(req(a, "id"));
                return null;
            case "commands.get_command_status":
                return sandbox(a).commands().getCommandStatus(req(a, "id")).toJson();
            case "commands.follow_background_command_logs":
                return followLogs(a);
            case "pty.create":
                return Json.obj("session_id", sandbox(a).pty().createSession(str(a, "cwd"), str(a, "command")));
            case "pty.get": {
                PtySessionStatus st = sandbox(a).pty().getSession(req(a, "session_id"));
                return Json.obj("session_id", st.getSessionId(), "running", st.getRunning(), "output_offset", st.getOutputOffset());
            }
            case "pty.delete":
                sandbox(a).pty().deleteSession(req(a, "session_id"));
                return null;
            case "pty.attach": {
                PtyConnection c = sandbox(a).pty().attach(req(a, "session_id"), lng(a, "since"),
                        "pipe".equals(str(a, "mode")), bool(a, "takeover"));
                String h = "pty-" + (++nextHandle);
                ptys.put(h, c);
                return Json.obj("handle", h, "mode", c.getMode());
            }
            case "pty.write":
                pty(a).getOutputStream().write(req(a, "text").getBytes(StandardCharsets.UTF_8));
                return null;
            case "pty.resize":
                pty(a).resize(integer(a, "cols"), integer(a, "rows"));
                return null;
            case "pty.read": {
                Long wait = lng(a, "wait_ms");
                PtyRead r = pty(a).read(str(a, "until"), bool(a, "until_exit"), wait == null ? null : Duration.ofMillis(wait));
                return Json.obj("output", r.getText(), "channel", r.getChannel(), "offset", r.getOffset(),
                        "next_offset", r.getNextOffset(), "exit_code", r.getExitCode(), "closed", r.isClosed(),
                        "close_code", r.getCloseCode(), "timed_out", r.isTimedOut(), "done", r.isDone());
            }
            case "pty.close": {
                PtyConnection c = pty(a);
                ptys.remove(req(a, "handle"));
                c.close();
                return Json.obj("next_offset", c.getNextOffset());
            }
            case "commands.get_background_command_logs":
                return sandbox(a).commands().getBackgroundCommandLogs(req(a, "id"), lng(a, "cursor")).toJson();
            case "commands.create_session":
                return Json.obj("session_id", sandbox(a).commands().createSession(str(a, "working_directory")));
            case "commands.run_in_session": {
                Recorder r = bool(a, "handlers") ? recorder(a, true, false) : null;
                RunInSessionRequest.Builder b = RunInSessionRequest.builder().command(req(a, "command"))
                        .workingDirectory(str(a, "working_directory"));
                if (lng(a, "timeout_ms") != null) {
                    b.timeout(Duration.ofMillis(lng(a, "timeout_ms")));
                }
                if (r != null) {
                    b.handlers(r.handlers());
                } else if (bool(a, "skip_accumulation")) {
                    b.handlers(ExecutionHandlers.builder().skipAccumulation().build());
                }
                return execution(sandbox(a).commands().runInSession(req(a, "session_id"), b.build()), r);
            }
            case "commands.delete_session":
                sandbox(a).commands().deleteSession(req(a, "session_id"));
                return null;
            case "code.create_context":
                return ctx(codes(a).createContext(req(a, "language"), str(a, "cwd")));
            case "code.get_context":
                return ctx(codes(a).getContext(req(a, "context_id")));
            case "code.list_contexts": {
                List<Object> out = new ArrayList<>();
                for (CodeContext c : codes(a).listContexts(str(a, "language"))) {
                    out.add(ctx(c));
                }
                return out;
            }
            case "code.delete_context":
                codes(a).deleteContext(req(a, "context_id"));
                return null;
            case "code.delete_contexts":
                codes(a).deleteContexts(req(a, "language"));
                return null;
            case "code.run": {
                Recorder r = bool(a, "handlers") ? recorder(a, true, false) : null;
                RunCodeRequest.Builder b = RunCodeRequest.builder().code(req(a, "code")).context(codeTarget(a));
                if (r != null) {
                    b.handlers(r.handlers());
                } else if (bool(a, "skip_accumulation")) {
                    b.handlers(ExecutionHandlers.builder().skipAccumulation().build());
                }
                return execution(codes(a).run(b.build()), r);
            }
            case "code.start": {
                Recorder r = recorder(a, bool(a, "handlers"), false);
                return start(codes(a).runAsync(RunCodeRequest.builder().code(req(a, "code")).context(codeTarget(a))
                        .handlers(r.handlers()).build()), r);
            }
            case "code.interrupt":
                codes(a).interrupt(req(a, "id"));
                return null;
            case "files.write_file":
                files(a).writeFile(writeEntry(a));
                return null;
            case "files.write_files": {
                List<WriteEntry> l = new ArrayList<>();
                for (Map<?, ?> e : objects(a, "entries")) {
                    l.add(writeEntry(e));
                }
                files(a).write(l);
                return null;
            }
            case "files.read_file":
                return Json.obj("text", files(a).readFile(req(a, "path"), "UTF-8", str(a, "range"),
                        lng(a, "offset"), lng(a, "limit")));
            case "files.read_bytes": {
                byte[] b = files(a).readByteArray(req(a, "path"), str(a, "range"), lng(a, "offset"), lng(a, "limit"));
                return Json.obj("data_b64", Base64.getEncoder().encodeToString(b), "size", b.length,
                        "sha256", hex(MessageDigest.getInstance("SHA-256").digest(b)));
            }
            case "files.read_bytes_stream": {
                MessageDigest sha = MessageDigest.getInstance("SHA-256");
                long size = 0;
                try (InputStream in = files(a).readStream(req(a, "path"), str(a, "range"), lng(a, "offset"),
                        lng(a, "limit"))) {
                    byte[] buf = new byte[256 * 1024];
                    int n;
                    while ((n = in.read(buf)) >= 0) {
                        sha.update(buf, 0, n);
                        size += n;
                    }
                }
                return Json.obj("size", size, "sha256", hex(sha.digest()));
            }
            case "files.get_file_info": {
                Map<String, Object> out = new LinkedHashMap<>();
                for (Map.Entry<String, EntryInfo> e : files(a).readFileInfo(strList(a, "paths")).entrySet()) {
                    out.put(e.getKey(), entry(e.getValue()));
                }
                return out;
            }
            case "files.delete_files":
                files(a).deleteFiles(strList(a, "paths"));
                return null;
            case "files.delete_directories":
                files(a).deleteDirectories(strList(a, "paths"));
                return null;
            case "files.move_files": {
                List<MoveEntry> l = new ArrayList<>();
                for (Map<?, ?> e : objects(a, "entries")) {
                    l.add(MoveEntry.builder().src(req(e, "src")).dest(req(e, "dest")).build());
                }
                files(a).moveFiles(l);
                return null;
            }
            case "files.set_permissions": {
                List<SetPermissionEntry> l = new ArrayList<>();
                for (Map<?, ?> e : objects(a, "entries")) {
                    l.add(SetPermissionEntry.builder().path(req(e, "path")).mode(integer(e, "mode")).owner(str(e, "owner"))
                            .group(str(e, "group")).build());
                }
                files(a).setPermissions(l);
                return null;
            }
            case "files.create_directories": {
                List<WriteEntry> l = new ArrayList<>();
                for (Map<?, ?> e : objects(a, "entries")) {
                    l.add(WriteEntry.builder().path(req(e, "path")).mode(integer(e, "mode")).owner(str(e, "owner"))
                            .group(str(e, "group")).build());
                }
                files(a).createDirectories(l);
                return null;
            }
            case "files.replace_contents":
            case "files.replace_contents_detailed": {
                List<ContentReplaceEntry> l = new ArrayList<>();
                for (Map<?, ?> e : objects(a, "entries")) {
                    l.add(ContentReplaceEntry.builder().path(req(e, "path")).oldContent(req(e, "old_content"))
                            .newContent(req(e, "new_content")).build());
                }
                if (op.equals("files.replace_contents")) {
                    files(a).replaceContents(l);
                    return null;
                }
                List<Object> out = new ArrayList<>();
                for (ReplaceResult r : files(a).replaceContentsDetailed(l)) {
                    out.add(r.toJson());
                }
                return out;
            }
            case "files.search":
                return entries(files(a).search(SearchEntry.builder().path(req(a, "path")).pattern(str(a, "pattern")).build()));
            case "files.list_directory":
                return entries(files(a).listDirectory(req(a, "path"), integer(a, "depth")));
            case "metrics.watch": {
                List<Object> out = new ArrayList<>();
                for (SandboxMetrics m : sandbox(a).metrics().watch(integer(a, "count"))) {
                    out.add(m.toJson());
                }
                return out;
            }
            default:
                if (op.startsWith("manager.") && op.endsWith("_template") || op.equals("manager.list_templates")) {
                    return templateOp(op, a);
                }
                if (op.startsWith("credential_vault.")) {
                    return vaultOp(op, a);
                }
                if (op.startsWith("isolation.")) {
                    return isolationOp(op, a);
                }
                if (op.startsWith("pool.")) {
                    return poolOp(op, a);
                }
                throw new DriverError("unsupported_op", "the java driver does not implement " + op);
        }
    }

    // ---- (1.1) areas ----

    /** The file API of a files.* op: the sandbox's, one acting as a user, or an isolated session's. */
    Filesystem files(Map<?, ?> a) {
        if (a.get("identity") != null) {
            Map<?, ?> id = map(a.get("identity"));
            return sandbox(a).filesWithIdentity(lng(id, "uid"), lng(id, "gid"));
        }
        if (a.get("isolated_session") != null) {
            return sandbox(a).isolation().attach(str(a, "isolated_session")).getFiles();
        }
        return sandbox(a).files();
    }

    static LifecycleHook hook(Map<?, ?> h) {
        LifecycleHook.Builder b = LifecycleHook.builder().command(strList(h, "command"));
        if (integer(h, "timeout_seconds") != null) {
            b.timeoutSeconds(integer(h, "timeout_seconds"));
        }
        return b.build();
    }

    static void create11(Map<?, ?> a, Sandbox.Builder b) {
        if (a.get("template_id") != null) {
            b.templateId(str(a, "template_id"));
        }
        if (a.get("platform") != null) {
            Map<?, ?> p = map(a.get("platform"));
            b.platform(PlatformSpec.builder().os(req(p, "os")).arch(req(p, "arch")).build());
        }
        if (a.containsKey("resource_requests")) {
            b.resourceRequests(strMap(a, "resource_requests"));
        }
        if (a.get("credential_proxy") != null) {
            b.credentialProxy(CredentialProxyConfig.builder().enabled(bool(map(a.get("credential_proxy")), "enabled")).build());
        }
        if (a.get("lifecycle") != null) {
            Map<?, ?> l = map(a.get("lifecycle"));
            SandboxLifecycle.Builder lb = SandboxLifecycle.builder();
            if (l.get("pre_start") != null) {
                lb.preStart(hook(map(l.get("pre_start"))));
            }
            List<PeriodicLifecycleHook> periodic = new ArrayList<>();
            for (Map<?, ?> p : objects(l, "periodic")) {
                PeriodicLifecycleHook.Builder pb = PeriodicLifecycleHook.builder().name(req(p, "name"))
                        .schedule(req(p, "schedule")).command(strList(p, "command"));
                if (integer(p, "timeout_seconds") != null) {
                    pb.timeoutSeconds(integer(p, "timeout_seconds"));
                }
                periodic.add(pb.build());
            }
            if (!periodic.isEmpty()) {
                lb.periodic(periodic);
            }
            b.lifecycle(lb.build());
        }
        for (Map<?, ?> v : objects(a, "volumes")) {
            Volume.Builder vb = Volume.builder().name(req(v, "name")).mountPath(req(v, "mount_path"))
                    .readOnly(bool(v, "read_only")).subPath(str(v, "sub_path"));
            if (v.get("host") != null) {
                vb.host(Host.of(req(map(v.get("host")), "path")));
            }
            if (v.get("pvc") != null) {
                vb.pvc(PVC.of(req(map(v.get("pvc")), "claim_name")));
            }
            if (v.get("ossfs") != null) {
                Map<?, ?> o = map(v.get("ossfs"));
                OSSFS.Builder ob = OSSFS.builder().bucket(req(o, "bucket")).endpoint(req(o, "endpoint"))
                        .accessKeyId(req(o, "access_key_id")).accessKeySecret(req(o, "access_key_secret"));
                if (str(o, "version") != null) {
                    ob.version(str(o, "version"));
                }
                if (o.get("options") != null) {
                    ob.options(strList(o, "options"));
                }
                vb.ossfs(ob.build());
            }
            b.volume(vb.build());
        }
    }

    Object templateOp(String op, Map<?, ?> a) {
        SandboxManager m = manager(a);
        switch (op) {
            case "manager.create_template": {
                CreateTemplateRequest.Builder b = CreateTemplateRequest.builder().image(req(a, "image")).publish(req(a, "publish"));
                if (a.containsKey("resource_limits")) {
                    b.resourceLimits(strMap(a, "resource_limits"));
                }
                if (a.containsKey("entrypoint")) {
                    b.entrypoint(strList(a, "entrypoint"));
                }
                if (a.containsKey("env")) {
                    b.env(strMap(a, "env"));
                }
                if (a.containsKey("metadata")) {
                    b.metadata(strMap(a, "metadata"));
                }
                if (a.get("readiness") != null) {
                    Map<?, ?> r = map(a.get("readiness"));
                    TemplateReadiness.Builder rb = TemplateReadiness.builder();
                    if (str(r, "probe") != null) {
                        rb.probe(str(r, "probe"));
                    }
                    if (integer(r, "warmup_seconds") != null) {
                        rb.warmupSeconds(integer(r, "warmup_seconds"));
                    }
                    b.readiness(rb.build());
                }
                if (str(a, "format") != null) {
                    b.format(TemplateFormat.valueOf(str(a, "format").toUpperCase(Locale.ROOT)));
                }
                return m.createTemplate(b.build()).toJson();
            }
            case "manager.get_template":
                return m.getTemplate(req(a, "template_id")).toJson();
            case "manager.list_templates": {
                TemplateFilter.Builder f = TemplateFilter.builder();
                if (a.containsKey("metadata")) {
                    f.metadata(strMap(a, "metadata"));
                }
                if (integer(a, "page") != null) {
                    f.page(integer(a, "page"));
                }
                if (integer(a, "page_size") != null) {
                    f.pageSize(integer(a, "page_size"));
                }
                return m.listTemplates(f.build()).toJson();
            }
            case "manager.delete_template":
                m.deleteTemplate(req(a, "template_id"));
                return null;
            default:
                throw new DriverError("unsupported_op", "the java driver does not implement " + op);
        }
    }

    static Credential credential(Map<?, ?> c) {
        Map<?, ?> src = map(c.get("source"));
        InlineCredentialSource.Builder s = InlineCredentialSource.builder().value(req(src, "value"));
        if (str(src, "type") != null) {
            s.type(str(src, "type"));
        }
        return Credential.builder().name(req(c, "name")).source(s.build()).build();
    }

    static CredentialBinding binding(Map<?, ?> b) {
        Map<?, ?> m = map(b.get("match"));
        CredentialMatch.Builder mb = CredentialMatch.builder().hosts(strList(m, "hosts"));
        if (m.get("schemes") != null) {
            List<CredentialMatch.Scheme> schemes = new ArrayList<>();
            for (String x : strList(m, "schemes")) {
                schemes.add(CredentialMatch.Scheme.valueOf(x.toUpperCase(Locale.ROOT)));
            }
            mb.schemes(schemes);
        }
        if (m.get("methods") != null) {
            mb.methods(strList(m, "methods"));
        }
        if (m.get("paths") != null) {
            mb.paths(strList(m, "paths"));
        }
        Map<?, ?> au = map(b.get("auth"));
        CredentialAuth.Builder ab = CredentialAuth.builder();
        String type = req(au, "type");
        CredentialAuth.Type t = null;
        for (CredentialAuth.Type x : CredentialAuth.Type.values()) {
            if (x.wireName().equals(type)) {
                t = x;
            }
        }
        if (t == null) {
            throw new DriverError("driver_error", "unknown auth type " + type);
        }
        ab.type(t);
        if (str(au, "credential") != null) {
            ab.credential(str(au, "credential"));
        }
        if (str(au, "name") != null) {
            ab.name(str(au, "name"));
        }
        if (au.get("headers") != null) {
            List<CustomHeaderEntry> hs = new ArrayList<>();
            for (Map<?, ?> h : objects(au, "headers")) {
                hs.add(CustomHeaderEntry.builder().name(req(h, "name")).credential(req(h, "credential")).build());
            }
            ab.headers(hs);
        }
        if (au.get("substitutions") != null) {
            for (Map<?, ?> x : objects(au, "substitutions")) {
                List<CredentialSubstitution.Surface> in = new ArrayList<>();
                for (String sf : strList(x, "in")) {
                    in.add(CredentialSubstitution.Surface.valueOf(sf.toUpperCase(Locale.ROOT)));
                }
                ab.substitution(CredentialSubstitution.builder().credential(req(x, "credential"))
                        .placeholder(req(x, "placeholder")).surfaces(in).build());
            }
        }
        return CredentialBinding.builder().name(req(b, "name")).match(mb.build()).auth(ab.build()).build();
    }

    Object vaultOp(String op, Map<?, ?> a) {
        var v = sandbox(a).credentialVault();
        switch (op) {
            case "credential_vault.create": {
                List<Credential> cs = new ArrayList<>();
                for (Map<?, ?> c : objects(a, "credentials")) {
                    cs.add(credential(c));
                }
                List<CredentialBinding> bs = new ArrayList<>();
                for (Map<?, ?> b : objects(a, "bindings")) {
                    bs.add(binding(b));
                }
                return v.create(cs, bs).toJson();
            }
            case "credential_vault.get":
                return v.get().toJson();
            case "credential_vault.patch": {
                CredentialVaultPatchRequest.Builder p = CredentialVaultPatchRequest.builder()
                        .expectedRevision(integer(a, "expected_revision"));
                if (a.get("credentials") != null) {
                    Map<?, ?> m = map(a.get("credentials"));
                    CredentialMutationSet.Builder mb = CredentialMutationSet.builder();
                    if (m.get("add") != null) {
                        List<Credential> l = new ArrayList<>();
                        for (Map<?, ?> c : objects(m, "add")) {
                            l.add(credential(c));
                        }
                        mb.add(l);
                    }
                    if (m.get("replace") != null) {
                        List<Credential> l = new ArrayList<>();
                        for (Map<?, ?> c : objects(m, "replace")) {
                            l.add(credential(c));
                        }
                        mb.replace(l);
                    }
                    if (m.get("delete") != null) {
                        mb.delete(strList(m, "delete"));
                    }
                    p.credentials(mb.build());
                }
                if (a.get("bindings") != null) {
                    Map<?, ?> m = map(a.get("bindings"));
                    CredentialBindingMutationSet.Builder mb = CredentialBindingMutationSet.builder();
                    if (m.get("add") != null) {
                        List<CredentialBinding> l = new ArrayList<>();
                        for (Map<?, ?> c : objects(m, "add")) {
                            l.add(binding(c));
                        }
                        mb.add(l);
                    }
                    if (m.get("replace") != null) {
                        List<CredentialBinding> l = new ArrayList<>();
                        for (Map<?, ?> c : objects(m, "replace")) {
                            l.add(binding(c));
                        }
                        mb.replace(l);
                    }
                    if (m.get("delete") != null) {
                        mb.delete(strList(m, "delete"));
                    }
                    p.bindings(mb.build());
                }
                return v.patch(p.build()).toJson();
            }
            case "credential_vault.delete":
                v.delete();
                return null;
            case "credential_vault.list_credentials": {
                List<Object> out = new ArrayList<>();
                for (CredentialMetadata c : v.listCredentials()) {
                    out.add(c.toJson());
                }
                return out;
            }
            case "credential_vault.get_credential":
                return v.getCredential(req(a, "name")).toJson();
            case "credential_vault.list_bindings": {
                List<Object> out = new ArrayList<>();
                for (CredentialBindingMetadata b : v.listBindings()) {
                    out.add(b.toJson());
                }
                return out;
            }
            case "credential_vault.get_binding":
                return v.getBinding(req(a, "name")).toJson();
            default:
                throw new DriverError("unsupported_op", "the java driver does not implement " + op);
        }
    }

    Object isolationOp(String op, Map<?, ?> a) throws Exception {
        var iso = sandbox(a).isolation();
        switch (op) {
            case "isolation.capabilities":
                return iso.capabilities().toJson();
            case "isolation.create": {
                CreateIsolatedSessionRequest.Builder b = CreateIsolatedSessionRequest.builder();
                if (a.get("workspace") != null) {
                    Map<?, ?> w = map(a.get("workspace"));
                    b.workspace(new IsolatedWorkspaceSpec(req(w, "path"), str(w, "mode")));
                }
                if (a.get("overlays") != null) {
                    List<IsolatedOverlaySpec> l = new ArrayList<>();
                    for (Map<?, ?> o : objects(a, "overlays")) {
                        l.add(new IsolatedOverlaySpec(req(o, "path"), str(o, "mode"), (Boolean) o.get("persist")));
                    }
                    b.overlays(l);
                }
                if (a.get("binds") != null) {
                    List<BindMount> l = new ArrayList<>();
                    for (Map<?, ?> o : objects(a, "binds")) {
                        l.add(new BindMount(req(o, "source"), str(o, "dest"), (Boolean) o.get("readonly")));
                    }
                    b.binds(l);
                }
                if (a.get("extra_writable") != null) {
                    b.extraWritable(strList(a, "extra_writable"));
                }
                if (a.get("env_passthrough") != null) {
                    Map<?, ?> e = map(a.get("env_passthrough"));
                    b.envPassthrough(new EnvPassthroughSpec(str(e, "mode"), e.get("keys") == null ? null : strList(e, "keys")));
                }
                b.profile(str(a, "profile")).shareNet((Boolean) a.get("share_net")).uid(integer(a, "uid"))
                        .gid(integer(a, "gid")).uidMode(str(a, "uid_mode")).idleTimeoutSeconds(integer(a, "idle_timeout_seconds"));
                return iso.create(b.build()).getInfo().toJson();
            }
            case "isolation.attach":
                return iso.attach(req(a, "session_id")).getInfo().toJson();
            case "isolation.list": {
                List<Object> out = new ArrayList<>();
                for (IsolatedSessionSummary x : iso.list()) {
                    out.add(x.toJson());
                }
                return out;
            }
            default:
                break;
        }
        IsolationSession s = iso.attach(req(a, "session_id"));
        switch (op) {
            case "isolation.get":
                return s.get().toJson();
            case "isolation.delete":
                s.delete();
                return null;
            case "isolation.run": {
                Recorder r = bool(a, "handlers") ? recorder(a, true, false) : null;
                ExecutionHandlers h = r != null ? r.handlers()
                        : bool(a, "skip_accumulation") ? ExecutionHandlers.builder().skipAccumulation().build() : null;
                return execution(s.run(new IsolatedRunRequest(req(a, "code"), strMap(a, "envs"), integer(a, "timeout_s"), h)), r);
            }
            case "isolation.start": {
                Recorder r = recorder(a, bool(a, "handlers"), false);
                return start(s.runAsync(new IsolatedRunRequest(req(a, "code"), strMap(a, "envs"), integer(a, "timeout_s"),
                        r.handlers())), r);
            }
            case "isolation.run_background":
                return s.runBackground(req(a, "code"), strMap(a, "envs")).toJson();
            case "isolation.run_status":
                return s.getRunStatus(req(a, "run_id")).toJson();
            case "isolation.run_logs":
                return s.getRunLogs(req(a, "run_id"), lng(a, "cursor")).toJson();
            default:
                throw new DriverError("unsupported_op", "the java driver does not implement " + op);
        }
    }

    // ---- client-side pools (PROTOCOL.md §2.11) ----

    Object poolOp(String op, Map<?, ?> a) {
        String name = req(a, "pool_name");
        if (op.equals("pool.start")) {
            return startPool(name, a);
        }
        SandboxPool pool = pools.get(name);
        if (pool == null) {
            throw new DriverError("driver_error", "no pool " + name + " was started in this driver");
        }
        switch (op) {
            case "pool.snapshot": {
                PoolSnapshot s = pool.snapshot();
                return Json.obj("lifecycle_state", s.getLifecycleState().name(), "state", s.getState().name(),
                        "idle_count", s.getIdleCount(), "max_idle", s.getMaxIdle());
            }
            case "pool.idle_entries": {
                List<Object> out = new ArrayList<>();
                for (IdleEntry e : pool.snapshotIdleEntries()) {
                    out.add(Json.obj("sandbox_id", e.getSandboxId(),
                            "expires_at", e.getExpiresAt() == null ? null : e.getExpiresAt().toString()));
                }
                return out;
            }
            case "pool.acquire": {
                String policy = str(a, "policy");
                Sandbox s = pool.acquire(secs(a, "sandbox_timeout_s"),
                        policy == null ? AcquirePolicy.DIRECT_CREATE : AcquirePolicy.valueOf(policy));
                return keep(Collections.emptyMap(), s);
            }
            case "pool.resize":
                pool.resize(integer(a, "max_idle"));
                return null;
            case "pool.release_all_idle":
                return Json.obj("count", pool.releaseAllIdle());
            case "pool.shutdown":
                pool.shutdown(!a.containsKey("graceful") || bool(a, "graceful"));
                return null;
            default:
                throw new DriverError("unsupported_op", "the java driver does not implement " + op);
        }
    }

    Object startPool(String name, Map<?, ?> a) {
        closePool(name);
        PoolStateStore store;
        String kind = str(a, "store") == null ? "memory" : str(a, "store");
        if (kind.equals("redis")) {
            redis.clients.jedis.UnifiedJedis client = redis.clients.jedis.RedisClient.create(java.net.URI.create(req(a, "redis_url")));
            redisClients.put(name, client);
            String prefix = str(a, "key_prefix");
            store = prefix == null ? new RedisPoolStateStore(client) : new RedisPoolStateStore(client, prefix);
        } else if (kind.equals("memory")) {
            store = new InMemoryPoolStateStore();
        } else {
            throw new DriverError("driver_error", "unknown store " + kind);
        }
        PoolCreationSpec.Builder spec = PoolCreationSpec.builder().image(str(a, "image") == null ? "python:3.11" : str(a, "image"));
        if (a.get("metadata") != null) {
            spec.metadata(strMap(a, "metadata"));
        }
        SandboxPool.Builder b = SandboxPool.builder().poolName(name).maxIdle(integer(a, "max_idle"))
                .stateStore(store).connectionConfig(base).creationSpec(spec.build());
        if (secs(a, "idle_timeout_s") != null) {
            b.idleTimeout(secs(a, "idle_timeout_s"));
        }
        if (secs(a, "primary_lock_ttl_s") != null) {
            b.primaryLockTtl(secs(a, "primary_lock_ttl_s"));
        }
        if (secs(a, "reconcile_interval_s") != null) {
            b.reconcileInterval(secs(a, "reconcile_interval_s"));
        }
        if (str(a, "owner_id") != null) {
            b.ownerId(str(a, "owner_id"));
        }
        SandboxPool pool = b.build();
        pool.start();
        pools.put(name, pool);
        return Json.obj("pool_name", name);
    }

    void closePool(String name) {
        SandboxPool old = pools.remove(name);
        if (old != null) {
            old.shutdown(false);
        }
        redis.clients.jedis.UnifiedJedis client = redisClients.remove(name);
        if (client != null) {
            client.close();
        }
    }

    void closePools() {
        for (String name : new ArrayList<>(pools.keySet())) {
            closePool(name);
        }
    }

    PtyConnection pty(Map<?, ?> a) {
        PtyConnection c = ptys.get(req(a, "handle"));
        if (c == null) {
            throw new DriverError("driver_error", "no pty with handle " + str(a, "handle"));
        }
        return c;
    }

    Object followLogs(Map<?, ?> a) {
        long start = lng(a, "cursor") == null ? 0 : lng(a, "cursor");
        Long limit = lng(a, "max_bytes");
        java.io.ByteArrayOutputStream content = new java.io.ByteArrayOutputStream();
        Long first = null;
        long expected = start;
        long chunks = 0;
        boolean contiguous = true;
        boolean ended = true;
        try (Pty.LogFollower f = sandbox(a).pty().followLogs(req(a, "id"), start)) {
            while (f.hasNext()) {
                LogChunk c = f.next();
                chunks++;
                if (first == null) {
                    first = c.getOffset();
                }
                contiguous = contiguous && c.getOffset() == expected;
                byte[] data = c.getData();
                expected = c.getOffset() + data.length;
                content.write(data, 0, data.length);
                if (limit != null && content.size() >= limit) {
                    ended = false;
                    break;
                }
            }
        }
        return Json.obj("content", new String(content.toByteArray(), StandardCharsets.UTF_8), "first_offset", first,
                "cursor", expected, "chunks", chunks, "contiguous", contiguous, "ended", ended);
    }

    Codes codes(Map<?, ?> a) {
        return CodeInterpreter.builder().fromSandbox(sandbox(a)).build().codes();
    }

    static Object error(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof SandboxException) {
            SandboxException e = (SandboxException) t;
            Integer status = e instanceof SandboxApiException ? ((SandboxApiException) e).getStatusCode() : null;
            String code = e.getError() == null ? null : e.getError().getCode();
            String kind = code != null && code.startsWith("POOL_") ? code.toLowerCase(Locale.ROOT) : e.getKind();
            return Json.obj("kind", kind, "status", status, "code", code, "request_id", e.getRequestId(),
                    "message", e.getMessage());
        }
        if (t instanceof DriverError) {
            return Json.obj("kind", ((DriverError) t).kind, "message", t.getMessage());
        }
        return Json.obj("kind", "driver_error", "message", String.valueOf(t));
    }

    public static void main(String[] args) throws Exception {
        OUT.println(Json.write(Json.obj("hello", "opensandbox-conformance", "protocol", 1, "language", "java",
                "sdk", "com.alibaba.opensandbox:sandbox", "sdk_version", "1.1.1")));
        Driver d = new Driver();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            Object id = null;
            Object response;
            try {
                Map<?, ?> req = map(Json.parse(line));
                id = req.get("id");
                Object result = d.dispatch(String.valueOf(req.get("op")), map(req.get("args")));
                response = Json.obj("id", id, "ok", true, "result", result);
            } catch (Throwable t) {
                if (!(t instanceof SandboxException) && !(t instanceof DriverError)) {
                    t.printStackTrace();
                }
                response = Json.obj("id", id, "ok", false, "error", error(t));
            }
            OUT.println(Json.write(response));
        }
        d.closePools();
    }
}
