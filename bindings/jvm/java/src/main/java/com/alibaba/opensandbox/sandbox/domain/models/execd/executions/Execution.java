// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The outcome of a command, session or code run. {@code exitCode} follows the official
 * rules: 0 on completion, the numeric error value on a failed command, null for
 * background and code runs.
 */
public final class Execution {
    private final String id;
    private final Long executionCount;
    private final List<ExecutionResult> result;
    private final ExecutionError error;
    private final ExecutionComplete complete;
    private final Integer exitCode;
    private final ExecutionLogs logs;

    public Execution(String id, Long executionCount, List<ExecutionResult> result, ExecutionError error,
            ExecutionComplete complete, Integer exitCode, ExecutionLogs logs) {
        this.id = id;
        this.executionCount = executionCount;
        this.result = result;
        this.error = error;
        this.complete = complete;
        this.exitCode = exitCode;
        this.logs = logs;
    }

    public String getId() {
        return id;
    }

    public Long getExecutionCount() {
        return executionCount;
    }

    public List<ExecutionResult> getResult() {
        return result;
    }

    public ExecutionError getError() {
        return error;
    }

    public ExecutionComplete getComplete() {
        return complete;
    }

    public Integer getExitCode() {
        return exitCode;
    }

    public ExecutionLogs getLogs() {
        return logs;
    }

    /** Texts with their parallel timestamps (the op layer's Execution shape). */
    private static List<OutputMessage> messages(Object texts, Object timestamps, boolean isError) {
        List<OutputMessage> out = new ArrayList<>();
        if (texts instanceof List) {
            List<?> t = (List<?>) texts;
            List<?> ts = timestamps instanceof List ? (List<?>) timestamps : List.of();
            for (int i = 0; i < t.size(); i++) {
                Long stamp = i < ts.size() ? Json.long_(ts.get(i)) : null;
                out.add(new OutputMessage(Json.str(t.get(i)), stamp == null ? 0 : stamp, isError));
            }
        }
        return out;
    }

    /** Internal: from the native JSON form. */
    public static Execution fromJson(Object json) {
        Map<?, ?> m = (Map<?, ?>) json;
        List<ExecutionResult> results = new ArrayList<>();
        if (m.get("results") instanceof List) {
            for (Object x : (List<?>) m.get("results")) {
                Map<?, ?> r = (Map<?, ?>) x;
                Long ts = Json.long_(r.get("timestamp"));
                Map<String, Object> raw = new LinkedHashMap<>();
                if (r.get("raw") instanceof Map) {
                    for (Map.Entry<?, ?> e : ((Map<?, ?>) r.get("raw")).entrySet()) {
                        raw.put(String.valueOf(e.getKey()), e.getValue());
                    }
                }
                results.add(new ExecutionResult(Json.str(r.get("text")), ts == null ? 0 : ts, raw));
            }
        }
        ExecutionError error = null;
        if (m.get("error") instanceof Map) {
            Map<?, ?> e = (Map<?, ?>) m.get("error");
            error = new ExecutionError(Json.str(e.get("name")), Json.str(e.get("value")),
                    Json.long_(e.get("timestamp")), Json.strList(e.get("traceback")));
        }
        ExecutionComplete complete = null;
        if (m.get("complete") instanceof Map) {
            Map<?, ?> c = (Map<?, ?>) m.get("complete");
            complete = new ExecutionComplete(Json.long_(c.get("timestamp")), Json.long_(c.get("execution_time_ms")));
        }
        return new Execution(Json.str(m.get("id")), Json.long_(m.get("execution_count")), results, error, complete,
                Json.integer(m.get("exit_code")),
                new ExecutionLogs(messages(m.get("stdout"), m.get("stdout_timestamps"), false),
                        messages(m.get("stderr"), m.get("stderr_timestamps"), true)));
    }
}
