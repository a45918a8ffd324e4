// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** A pool error: the pool namespace is being destroyed or is destroyed. */
public class PoolDestroyedException extends SandboxException {
    private static final long serialVersionUID = 1L;
    public static final String CODE = "POOL_DESTROYED";

    public PoolDestroyedException(String message, Throwable cause) {
        super(message, cause, new SandboxError(CODE, message), null);
    }

    public PoolDestroyedException(String message) {
        this(message, null);
    }
}
