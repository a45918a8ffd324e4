// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.isolated;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.domain.models.execd.executions.ExecutionHandlers;
import java.util.LinkedHashMap;
import java.util.Map;

/** Shell code run in an isolated session, with extra env and a server-side timeout (whole seconds). */
public final class IsolatedRunRequest {
    private final String code;
    private final Map<String, String> envs;
    private final Integer timeoutSeconds;
    private final ExecutionHandlers handlers;

    public IsolatedRunRequest(String code, Map<String, String> envs, Integer timeoutSeconds, ExecutionHandlers handlers) {
        if (code == null || code.trim().isEmpty()) {
            throw new InvalidArgumentException("Isolated run code cannot be blank");
        }
        if (timeoutSeconds != null && timeoutSeconds <= 0) {
            throw new InvalidArgumentException("Isolated run timeout must be positive");
        }
        this.code = code;
        this.envs = envs == null ? null : new LinkedHashMap<>(envs);
        this.timeoutSeconds = timeoutSeconds;
        this.handlers = handlers;
    }

    public IsolatedRunRequest(String code, Map<String, String> envs, Integer timeoutSeconds) {
        this(code, envs, timeoutSeconds, null);
    }

    public IsolatedRunRequest(String code) {
        this(code, null, null, null);
    }

    public String getCode() {
        return code;
    }

    public Map<String, String> getEnvs() {
        return envs;
    }

    public Integer getTimeoutSeconds() {
        return timeoutSeconds;
    }

    /** Streaming callbacks (addition: the Kotlin SDK returns the accumulated execution only). */
    public ExecutionHandlers getHandlers() {
        return handlers;
    }
}
