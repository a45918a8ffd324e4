// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/** A command run: the command, options and the handlers (handlers live in the request). */
public final class RunCommandRequest {
    private final String command;
    private final boolean background;
    private final String workingDirectory;
    private final Duration timeout;
    private final Integer uid;
    private final Integer gid;
    private final Map<String, String> envs;
    private final ExecutionHandlers handlers;

    private RunCommandRequest(Builder b) {
        this.command = b.command;
        this.background = b.background;
        this.workingDirectory = b.workingDirectory;
        this.timeout = b.timeout;
        this.uid = b.uid;
        this.gid = b.gid;
        this.envs = b.envs;
        this.handlers = b.handlers;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getCommand() {
        return command;
    }

    public boolean getBackground() {
        return background;
    }

    public String getWorkingDirectory() {
        return workingDirectory;
    }

    public Duration getTimeout() {
        return timeout;
    }

    public Integer getUid() {
        return uid;
    }

    public Integer getGid() {
        return gid;
    }

    public Map<String, String> getEnvs() {
        return envs;
    }

    public ExecutionHandlers getHandlers() {
        return handlers;
    }

    /** Builder of {@link RunCommandRequest}. */
    public static final class Builder {
        private String command;
        private boolean background;
        private String workingDirectory;
        private Duration timeout;
        private Integer uid;
        private Integer gid;
        private final Map<String, String> envs = new LinkedHashMap<>();
        private ExecutionHandlers handlers;

        public Builder command(String command) {
            this.command = command;
            return this;
        }

        public Builder background(boolean background) {
            this.background = background;
            return this;
        }

        public Builder workingDirectory(String workingDirectory) {
            this.workingDirectory = workingDirectory;
            return this;
        }

        /** Server-side time limit of the command. */
        public Builder timeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        public Builder uid(Integer uid) {
            this.uid = uid;
            return this;
        }

        public Builder gid(Integer gid) {
            this.gid = gid;
            return this;
        }

        public Builder env(String key, String value) {
            this.envs.put(key, value);
            return this;
        }

        public Builder envs(Map<String, String> envs) {
            this.envs.putAll(envs);
            return this;
        }

        public Builder handlers(ExecutionHandlers handlers) {
            this.handlers = handlers;
            return this;
        }

        public RunCommandRequest build() {
            if (command == null || command.trim().isEmpty()) {
                throw new com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException(
                        "command must not be blank");
            }
            return new RunCommandRequest(this);
        }
    }
}
