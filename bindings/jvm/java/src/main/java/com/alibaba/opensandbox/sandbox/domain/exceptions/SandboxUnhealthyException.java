// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** The sandbox did not pass its health check. */
public class SandboxUnhealthyException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public SandboxUnhealthyException(String message, Throwable cause, SandboxError error, String requestId) {
        super(message, cause, error != null ? error : new SandboxError(SandboxError.UNHEALTHY, message), requestId);
    }

    public SandboxUnhealthyException(String message) {
        this(message, null, null, null);
    }
}
