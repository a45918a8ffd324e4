// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** A pool error: the pool state store refused a write under contention. */
public class PoolStateStoreContentionException extends SandboxException {
    private static final long serialVersionUID = 1L;
    public static final String CODE = "POOL_STATE_STORE_CONTENTION";

    public PoolStateStoreContentionException(String message, Throwable cause) {
        super(message, cause, new SandboxError(CODE, message), null);
    }

    public PoolStateStoreContentionException(String message) {
        this(message, null);
    }
}
