// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.execd.executions;

import java.util.ArrayList;
import java.util.List;

/** The accumulated stdout and stderr messages of an execution. */
public final class ExecutionLogs {
    private final List<OutputMessage> stdout;
    private final List<OutputMessage> stderr;

    public ExecutionLogs(List<OutputMessage> stdout, List<OutputMessage> stderr) {
        this.stdout = stdout;
        this.stderr = stderr;
    }

    public ExecutionLogs() {
        this(new ArrayList<>(), new ArrayList<>());
    }

    public List<OutputMessage> getStdout() {
        return stdout;
    }

    public List<OutputMessage> getStderr() {
        return stderr;
    }
}
