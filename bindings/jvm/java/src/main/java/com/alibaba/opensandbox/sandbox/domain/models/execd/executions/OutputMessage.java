// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

/** One stdout or stderr message (command lines arrive without their newline). */
public final class OutputMessage {
    private final String text;
    private final long timestamp;
    private final boolean isError;

    public OutputMessage(String text, long timestamp, boolean isError) {
        this.text = text;
        this.timestamp = timestamp;
        this.isError = isError;
    }

    public String getText() {
        return text;
    }

    public long getTimestamp() {
        return timestamp;
    }

    public boolean isError() {
        return isError;
    }

    @Override
    public String toString() {
        return "OutputMessage(text=" + text + ", timestamp=" + timestamp + ", isError=" + isError + ")";
    }
}
