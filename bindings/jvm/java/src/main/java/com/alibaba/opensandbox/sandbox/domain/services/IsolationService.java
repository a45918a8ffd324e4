// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.services;

import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.Execution;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.BindMount;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.CreateIsolatedSessionRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedCapabilities;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedRunRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedSessionInfo;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedSessionSummary;
import com.alibaba.opensandbox.sandbox.domain.models.execd.isolated.IsolatedWorkspaceSpec;
import com.alibaba.opensandbox.sandbox.domain.exceptions.SandboxException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/** Isolated sessions of a sandbox ({@code sandbox.isolation()}); needs an isolator in the sandbox. */
public final class IsolationService {
    private final long handle;

    /** Internal: use {@code sandbox.isolation()}. */
    public IsolationService(long handle) {
        this.handle = handle;
    }

    public IsolationSession create(CreateIsolatedSessionRequest request) {
        Map<String, Object> a = request.toJson();
        a.put("sandbox", handle);
        return new IsolationSession(handle, IsolatedSessionInfo.fromJson(NativeBridge.invoke("isolation.create", a)));
    }

    /** A handle on an existing session (addition over the Kotlin SDK). */
    public IsolationSession attach(String sessionId) {
        return new IsolationSession(handle, IsolatedSessionInfo.fromJson(
                NativeBridge.invoke("isolation.attach", Json.obj("sandbox", handle, "session_id", sessionId))));
    }

    public IsolatedCapabilities capabilities() {
        return IsolatedCapabilities.fromJson(NativeBridge.invoke("isolation.capabilities", Json.obj("sandbox", handle)));
    }

    public List<IsolatedSessionSummary> list() {
        return Json.list(NativeBridge.invoke("isolation.list", Json.obj("sandbox", handle)), IsolatedSessionSummary::fromJson);
    }

    /** Creates a session on {@code workspace}, runs {@code code} once and deletes the session. */
    public Execution runOnce(String code, String workspace, String workspaceMode, Map<String, String> envs,
            Integer timeoutSeconds, String profile, Boolean shareNet, List<BindMount> binds) {
        CreateIsolatedSessionRequest.Builder b = CreateIsolatedSessionRequest.builder()
                .workspace(new IsolatedWorkspaceSpec(workspace, workspaceMode)).profile(profile).shareNet(shareNet);
        if (binds != null) {
            b.binds(binds);
        }
        return withSession(b.build(), s -> s.run(new IsolatedRunRequest(code, envs, timeoutSeconds)));
    }

    public Execution runOnce(String code, String workspace) {
        return runOnce(code, workspace, null, null, null, null, null, null);
    }

    /** Runs {@code block} with a new session, deleting it afterwards (a failed delete is not reported). */
    public <T> T withSession(CreateIsolatedSessionRequest request, Function<IsolationSession, T> block) {
        IsolationSession s = create(request);
        try {
            return block.apply(s);
        } finally {
            try {
                s.delete();
            } catch (SandboxException ignored) {
                // The session is gone or the sandbox is; the block's outcome matters more.
            }
        }
    }
}
