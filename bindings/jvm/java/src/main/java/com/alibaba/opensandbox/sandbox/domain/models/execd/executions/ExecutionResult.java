// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import java.util.Map;

/** A result of a code run: {@code text} is the text/plain form; every MIME form is in extraProperties. */
public final class ExecutionResult {
    private final String text;
    private final long timestamp;
    private final Map<String, Object> extraProperties;

    public ExecutionResult(String text, long timestamp, Map<String, Object> extraProperties) {
        this.text = text;
        this.timestamp = timestamp;
        this.extraProperties = extraProperties;
    }

    public String getText() {
        return text;
    }

    public long getTimestamp() {
        return timestamp;
    }

    public Map<String, Object> getExtraProperties() {
        return extraProperties;
    }
}
