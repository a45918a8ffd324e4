// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** A pool error: idle candidates were unusable and the acquire policy is FAIL_FAST. */
public class PoolAcquireFailedException extends SandboxException {
    private static final long serialVersionUID = 1L;
    public static final String CODE = "POOL_ACQUIRE_FAILED";

    public PoolAcquireFailedException(String message, Throwable cause) {
        super(message, cause, new SandboxError(CODE, message), null);
    }

    public PoolAcquireFailedException(String message) {
        this(message, null);
    }
}
