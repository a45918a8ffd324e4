// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** A command execd runs before the entrypoint starts ({@link SandboxLifecycle#getPreStart()}). */
public final class LifecycleHook {
    private final List<String> command;
    private final Integer timeoutSeconds;

    private LifecycleHook(List<String> command, Integer timeoutSeconds) {
        this.command = command;
        this.timeoutSeconds = timeoutSeconds;
    }

    public static Builder builder() {
        return new Builder();
    }

    public List<String> getCommand() {
        return command;
    }

    public Integer getTimeoutSeconds() {
        return timeoutSeconds;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("command", command, "timeout_seconds", timeoutSeconds);
    }

    static List<String> checkCommand(List<String> command, String what) {
        if (command == null || command.isEmpty() || command.get(0) == null || command.get(0).trim().isEmpty()) {
            throw new InvalidArgumentException(what + " command must not be empty");
        }
        return new ArrayList<>(command);
    }

    public static final class Builder {
        private List<String> command;
        private Integer timeoutSeconds;

        public Builder command(List<String> command) {
            this.command = checkCommand(command, "Lifecycle hook");
            return this;
        }

        public Builder command(String... command) {
            return command(Arrays.asList(command));
        }

        public Builder timeoutSeconds(int timeoutSeconds) {
            this.timeoutSeconds = timeoutSeconds;
            return this;
        }

        public LifecycleHook build() {
            if (command == null) {
                throw new InvalidArgumentException("Lifecycle hook command must be specified");
            }
            return new LifecycleHook(command, timeoutSeconds);
        }
    }
}
