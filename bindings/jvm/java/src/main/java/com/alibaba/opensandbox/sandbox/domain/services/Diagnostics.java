// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.services;

import com.alibaba.opensandbox.sandbox.config.ConnectionConfig;
import com.alibaba.opensandbox.sandbox.domain.models.sandboxes.DiagnosticContent;
import com.alibaba.opensandbox.sandbox.internal.Json;
import com.alibaba.opensandbox.sandbox.internal.NativeBridge;
import java.lang.ref.Reference;

/**
 * Server diagnostics of sandboxes ({@code sandbox.diagnostics()}): logs and events by scope
 * ({@code container}, {@code lifecycle}, {@code runtime}, {@code all}). As in the official SDK the
 * methods take the sandbox id, so one service can read any sandbox of the connection.
 */
public final class Diagnostics {
    private final ConnectionConfig config;

    /** Internal: use {@code sandbox.diagnostics()}. */
    public Diagnostics(ConnectionConfig config) {
        this.config = config;
    }

    private DiagnosticContent call(String op, String sandboxId, String scope) {
        try {
            return DiagnosticContent.fromJson(NativeBridge.invoke(op,
                    Json.obj("connection", config.nativeHandle(), "sandbox_id", sandboxId, "scope", scope)));
        } finally {
            Reference.reachabilityFence(config);
        }
    }

    public DiagnosticContent getLogs(String sandboxId, String scope) {
        return call("manager.get_diagnostic_logs", sandboxId, scope);
    }

    public DiagnosticContent getEvents(String sandboxId, String scope) {
        return call("manager.get_diagnostic_events", sandboxId, scope);
    }
}
