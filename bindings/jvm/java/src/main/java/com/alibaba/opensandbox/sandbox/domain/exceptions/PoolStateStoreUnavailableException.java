// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** A pool error: the pool state store could not be reached. */
public class PoolStateStoreUnavailableException extends SandboxException {
    private static final long serialVersionUID = 1L;
    public static final String CODE = "POOL_STATE_STORE_UNAVAILABLE";

    public PoolStateStoreUnavailableException(String message, Throwable cause) {
        super(message, cause, new SandboxError(CODE, message), null);
    }

    public PoolStateStoreUnavailableException(String message) {
        this(message, null);
    }
}
