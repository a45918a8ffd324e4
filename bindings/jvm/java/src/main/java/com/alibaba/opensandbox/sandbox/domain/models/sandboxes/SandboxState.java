// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.models.sandboxes;

/** Sandbox states as the server spells them (an open set: servers may add states). */
public final class SandboxState {
    public static final String PENDING = "Pending";
    public static final String RUNNING = "Running";
    public static final String PAUSING = "Pausing";
    public static final String PAUSED = "Paused";
    public static final String RESUMING = "Resuming";
    public static final String STOPPING = "Stopping";
    public static final String TERMINATED = "Terminated";
    public static final String FAILED = "Failed";

    private SandboxState() {}
}
