// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.services;

import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.Execution;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.ExecutionHandlers;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedBackgroundRun;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedRunLogs;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedRunRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedRunStatus;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedSessionInfo;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedSessionState;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * One isolated session of a sandbox: a shell whose state (cwd, variables) persists between runs,
 * in its own mount namespace. {@link #getFiles()} reads and writes inside the session's mounts.
 */
public final class IsolationSession {
    private final long handle;
    private final IsolatedSessionInfo info;
    private final Filesystem files;

    IsolationSession(long handle, IsolatedSessionInfo info) {
        this.handle = handle;
        this.info = info;
        this.files = new Filesystem(handle, Json.obj("isolated_session", info.getSessionId()));
    }

    public String getSessionId() {
        return info.getSessionId();
    }

    public IsolatedSessionInfo getInfo() {
        return info;
    }

    public Filesystem getFiles() {
        return files;
    }

    private Map<String, Object> args(Object... kv) {
        Map<String, Object> m = Json.obj(kv);
        m.put("sandbox", handle);
        m.put("session_id", info.getSessionId());
        return m;
    }

    private Map<String, Object> runArgs(IsolatedRunRequest r) {
        ExecutionHandlers h = r.getHandlers();
        return args("code", r.getCode(), "envs", r.getEnvs(), "timeout_s", r.getTimeoutSeconds(),
                "skip_accumulation", h != null && h.getSkipAccumulation());
    }

    /** Runs shell code to completion; a non-zero exit is {@code ExitError} in the execution's error. */
    public Execution run(IsolatedRunRequest request) {
        return Execution.fromJson(NativeBridge.invoke("isolation.run", runArgs(request), request.getHandlers()));
    }

    public Execution run(String code) {
        return run(new IsolatedRunRequest(code));
    }

    /** As {@link #run(IsolatedRunRequest)} without blocking; {@code cancel(true)} stops the run. */
    public CompletableFuture<Execution> runAsync(IsolatedRunRequest request) {
        return NativeBridge.mapCancellable(
                NativeBridge.invokeAsync("isolation.run", runArgs(request), request.getHandlers()), Execution::fromJson);
    }

    /** Starts shell code in the background (addition): poll {@link #getRunStatus}, read {@link #getRunLogs}. */
    public IsolatedBackgroundRun runBackground(String code, Map<String, String> envs) {
        return IsolatedBackgroundRun.fromJson(NativeBridge.invoke("isolation.run_background",
                args("code", code, "envs", envs)));
    }

    public IsolatedRunStatus getRunStatus(String runId) {
        return IsolatedRunStatus.fromJson(NativeBridge.invoke("isolation.run_status", args("run_id", runId)));
    }

    /** Output of a background run from byte offset {@code cursor} (null = 0), and the cursor to read on from. */
    public IsolatedRunLogs getRunLogs(String runId, Long cursor) {
        return IsolatedRunLogs.fromJson(NativeBridge.invoke("isolation.run_logs", args("run_id", runId, "cursor", cursor)));
    }

    public IsolatedSessionState get() {
        return IsolatedSessionState.fromJson(NativeBridge.invoke("isolation.get", args()));
    }

    public void delete() {
        NativeBridge.invoke("isolation.delete", args());
    }
}
