// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** An SDK-side failure (connection, timeout, stream, internal). */
public class SandboxInternalException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public SandboxInternalException(String message, Throwable cause, SandboxError error, String requestId) {
        super(message, cause, error != null ? error : new SandboxError(SandboxError.INTERNAL_UNKNOWN_ERROR, message), requestId);
    }

    public SandboxInternalException(String message) {
        this(message, null, null, null);
    }
}
