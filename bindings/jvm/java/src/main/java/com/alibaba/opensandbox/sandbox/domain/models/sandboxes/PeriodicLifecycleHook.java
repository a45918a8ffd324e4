// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

import com.alibaba.opensandbox.sandbox.domain.exceptions.InvalidArgumentException;
import com.alibaba.opensandbox.sandbox.internal.Json;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** A named command execd runs on a schedule ({@code @every 30s}, cron) while the sandbox runs. */
public final class PeriodicLifecycleHook {
    private final String name;
    private final String schedule;
    private final List<String> command;
    private final Integer timeoutSeconds;

    private PeriodicLifecycleHook(String name, String schedule, List<String> command, Integer timeoutSeconds) {
        this.name = name;
        this.schedule = schedule;
        this.command = command;
        this.timeoutSeconds = timeoutSeconds;
    }

    public static Builder builder() {
        return new Builder();
    }

    public String getName() {
        return name;
    }

    public String getSchedule() {
        return schedule;
    }

    public List<String> getCommand() {
        return command;
    }

    public Integer getTimeoutSeconds() {
        return timeoutSeconds;
    }

    /** Internal: the op layer's form. */
    public Map<String, Object> toJson() {
        return Json.obj("name", name, "schedule", schedule, "command", command, "timeout_seconds", timeoutSeconds);
    }

    public static final class Builder {
        private String name;
        private String schedule;
        private List<String> command;
        private Integer timeoutSeconds;

        public Builder name(String name) {
            if (name == null || name.trim().isEmpty()) {
                throw new InvalidArgumentException("Periodic lifecycle hook name must not be empty");
            }
            this.name = name.trim();
            return this;
        }

        public Builder schedule(String schedule) {
            if (schedule == null || schedule.trim().isEmpty()) {
                throw new InvalidArgumentException("Periodic lifecycle hook schedule must not be empty");
            }
            this.schedule = schedule.trim();
            return this;
        }

        public Builder command(List<String> command) {
            this.command = LifecycleHook.checkCommand(command, "Periodic lifecycle hook");
            return this;
        }

        public Builder command(String... command) {
            return command(Arrays.asList(command));
        }

        public Builder timeoutSeconds(int timeoutSeconds) {
            this.timeoutSeconds = timeoutSeconds;
            return this;
        }

        public PeriodicLifecycleHook build() {
            if (name == null) {
                throw new InvalidArgumentException("Periodic lifecycle hook name must be specified");
            }
            if (schedule == null) {
                throw new InvalidArgumentException("Periodic lifecycle hook schedule must be specified");
            }
            if (command == null) {
                throw new InvalidArgumentException("Periodic lifecycle hook command must be specified");
            }
            return new PeriodicLifecycleHook(name, schedule, command, timeoutSeconds);
        }
    }
}
