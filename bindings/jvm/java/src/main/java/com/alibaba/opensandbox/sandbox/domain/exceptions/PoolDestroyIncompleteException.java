// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** A pool error: a destroy could not finish (drain timeout or a store failure); calling destroy again resumes it. */
public class PoolDestroyIncompleteException extends SandboxException {
    private static final long serialVersionUID = 1L;
    public static final String CODE = "POOL_DESTROY_INCOMPLETE";

    public PoolDestroyIncompleteException(String message, Throwable cause) {
        super(message, cause, new SandboxError(CODE, message), null);
    }

    public PoolDestroyIncompleteException(String message) {
        this(message, null);
    }
}
