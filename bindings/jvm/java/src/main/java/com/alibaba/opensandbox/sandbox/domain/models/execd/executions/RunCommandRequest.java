// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A command run: the command (shell text, run with {@code bash -c}) or (1.1) an
 * {@code argv} (executable and literal arguments, no shell), options and the handlers
 * (handlers live in the request).
 */
public final class RunCommandRequest {
    private final String command;
    private final List<String> argv;
    private final boolean background;
    private final String workingDirectory;
    private final Duration timeout;
    private final Integer uid;
    private final Integer gid;
    private final Map<String, String> envs;
    private final ExecutionHandlers handlers;

    private RunCommandRequest(Builder b) {
        this.command = b.command != null ? b.command : "";
        this.argv = b.argv;
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

    /** (1.1) The argv of an argv run, else null ({@link #getCommand()} is then the shell text). */
    public List<String> getArgv() {
        return argv;
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
        private List<String> argv;
        private boolean background;
        private String workingDirectory;
        private Duration timeout;
        private Integer uid;
        private Integer gid;
        private final Map<String, String> envs = new LinkedHashMap<>();
        private ExecutionHandlers handlers;

        public Builder command(String command) {
            if (command == null || command.trim().isEmpty()) {
                throw new InvalidArgumentException("command must not be blank");
            }
            this.command = command;
            return this;
        }

        /** (1.1) Executable and literal arguments, run without a shell (instead of {@code command}). */
        public Builder argv(List<String> argv) {
            if (argv == null || argv.isEmpty() || argv.get(0) == null || argv.get(0).isEmpty()
                    || argv.stream().anyMatch(a -> a == null || a.indexOf('\u0000') >= 0)) {
                throw new InvalidArgumentException("Argv requires a non-empty executable and strings without NUL");
            }
            this.argv = Collections.unmodifiableList(new ArrayList<>(argv));
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
            if ((command == null) == (argv == null)) {
                throw new InvalidArgumentException("Exactly one of command or argv is required");
            }
            if (gid != null && uid == null) {
                throw new InvalidArgumentException("Uid is required when gid is provided");
            }
            return new RunCommandRequest(this);
        }
    }
}
