// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.services;

import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.CommandLogs;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.CommandStatus;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.Execution;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.ExecutionHandlers;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.RunCommandRequest;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.RunInSessionRequest;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** Commands, background commands and sessions of one sandbox ({@code sandbox.commands()}). */
public final class Commands {
    private final long handle;

    /** Internal: use {@code sandbox.commands()}. */
    public Commands(long handle) {
        this.handle = handle;
    }

    private Map<String, Object> args(RunCommandRequest r) {
        Map<String, Object> a = Json.obj("sandbox", handle,
                "background", r.getBackground(), "working_directory", r.getWorkingDirectory(),
                "uid", r.getUid(), "gid", r.getGid(), "envs", r.getEnvs());
        if (r.getArgv() != null) {
            a.put("argv", r.getArgv());
        } else {
            a.put("command", r.getCommand());
        }
        if (r.getTimeout() != null) {
            a.put("timeout_ms", r.getTimeout().toMillis());
        }
        ExecutionHandlers h = r.getHandlers();
        a.put("skip_accumulation", h != null && h.getSkipAccumulation());
        return a;
    }

    /** Runs a command to completion (handlers from the request are called as events arrive). */
    public Execution run(RunCommandRequest request) {
        return Execution.fromJson(NativeBridge.invoke("commands.run", args(request), request.getHandlers()));
    }

    public Execution run(String command) {
        return run(RunCommandRequest.builder().command(command).build());
    }

    /**
     * As {@link #run(RunCommandRequest)}, without blocking; handlers run on {@code ForkJoinPool} threads.
     * {@code cancel(true)} on the returned future stops the run and interrupts the command on the server;
     * the future then reports {@link java.util.concurrent.CancellationException}.
     */
    public CompletableFuture<Execution> runAsync(RunCommandRequest request) {
        return NativeBridge.mapCancellable(
                NativeBridge.invokeAsync("commands.run", args(request), request.getHandlers()), Execution::fromJson);
    }

    public CompletableFuture<Execution> runAsync(String command) {
        return runAsync(RunCommandRequest.builder().command(command).build());
    }

    public void interrupt(String executionId) {
        NativeBridge.invoke("commands.interrupt", Json.obj("sandbox", handle, "id", executionId));
    }

    public CommandStatus getCommandStatus(String executionId) {
        return CommandStatus.fromJson(NativeBridge.invoke("commands.get_command_status",
                Json.obj("sandbox", handle, "id", executionId)));
    }

    public CommandLogs getBackgroundCommandLogs(String executionId, Long cursor) {
        return CommandLogs.fromJson(NativeBridge.invoke("commands.get_background_command_logs",
                Json.obj("sandbox", handle, "id", executionId, "cursor", cursor)));
    }

    public CommandLogs getBackgroundCommandLogs(String executionId) {
        return getBackgroundCommandLogs(executionId, null);
    }

    /** Creates a shell session; returns its id. */
    public String createSession(String workingDirectory) {
        Map<?, ?> r = (Map<?, ?>) NativeBridge.invoke("commands.create_session",
                Json.obj("sandbox", handle, "working_directory", workingDirectory));
        return Json.str(r.get("session_id"));
    }

    public String createSession() {
        return createSession(null);
    }

    public Execution runInSession(String sessionId, RunInSessionRequest request) {
        Map<String, Object> a = Json.obj("sandbox", handle, "session_id", sessionId, "command", request.getCommand(),
                "working_directory", request.getWorkingDirectory());
        if (request.getTimeout() != null) {
            a.put("timeout_ms", request.getTimeout().toMillis());
        }
        ExecutionHandlers h = request.getHandlers();
        a.put("skip_accumulation", h != null && h.getSkipAccumulation());
        return Execution.fromJson(NativeBridge.invoke("commands.run_in_session", a, h));
    }

    public Execution runInSession(String sessionId, String command, String workingDirectory, Duration timeout) {
        return runInSession(sessionId, RunInSessionRequest.builder().command(command)
                .workingDirectory(workingDirectory).timeout(timeout).build());
    }

    public Execution runInSession(String sessionId, String command) {
        return runInSession(sessionId, command, null, null);
    }

    public void deleteSession(String sessionId) {
        NativeBridge.invoke("commands.delete_session", Json.obj("sandbox", handle, "session_id", sessionId));
    }
}
