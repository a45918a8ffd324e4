// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** An argument was rejected before any request was sent. */
public class InvalidArgumentException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public InvalidArgumentException(String message, Throwable cause, SandboxError error, String requestId) {
        super(message, cause, error != null ? error : new SandboxError(SandboxError.INVALID_ARGUMENT, message), requestId);
    }

    public InvalidArgumentException(String message) {
        this(message, null, null, null);
    }
}
