// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** A pool error: the pool is not running (not started, draining or stopped). */
public class PoolNotRunningException extends SandboxException {
    private static final long serialVersionUID = 1L;
    public static final String CODE = "POOL_NOT_RUNNING";

    public PoolNotRunningException(String message, Throwable cause) {
        super(message, cause, new SandboxError(CODE, message), null);
    }

    public PoolNotRunningException(String message) {
        this(message, null);
    }
}
