// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** A pool error: no idle sandbox and the acquire policy is FAIL_FAST. */
public class PoolEmptyException extends SandboxException {
    private static final long serialVersionUID = 1L;
    public static final String CODE = "POOL_EMPTY";

    public PoolEmptyException(String message, Throwable cause) {
        super(message, cause, new SandboxError(CODE, message), null);
    }

    public PoolEmptyException(String message) {
        this(message, null);
    }
}
