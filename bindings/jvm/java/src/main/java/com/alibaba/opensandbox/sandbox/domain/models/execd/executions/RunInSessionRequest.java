// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import java.time.Duration;

/** A command run inside a session (shell state persists between runs). */
public final class RunInSessionRequest {
    private final String command;
    private final String workingDirectory;
    private final Duration timeout;
    private final ExecutionHandlers handlers;

    private RunInSessionRequest(Builder b) {
        this.command = b.command;
        this.workingDirectory = b.workingDirectory;
        this.timeout = b.timeout;
        this.handlers = b.handlers;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getCommand() {
        return command;
    }

    public String getWorkingDirectory() {
        return workingDirectory;
    }

    public Duration getTimeout() {
        return timeout;
    }

    public ExecutionHandlers getHandlers() {
        return handlers;
    }

    /** Builder of {@link RunInSessionRequest}. */
    public static final class Builder {
        private String command;
        private String workingDirectory;
        private Duration timeout;
        private ExecutionHandlers handlers;

        public Builder command(String command) {
            this.command = command;
            return this;
        }

        public Builder workingDirectory(String workingDirectory) {
            this.workingDirectory = workingDirectory;
            return this;
        }

        public Builder timeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        public Builder handlers(ExecutionHandlers handlers) {
            this.handlers = handlers;
            return this;
        }

        public RunInSessionRequest build() {
            return new RunInSessionRequest(this);
        }
    }
}
