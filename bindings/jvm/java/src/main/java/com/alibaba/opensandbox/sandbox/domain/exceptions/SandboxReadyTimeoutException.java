// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** The sandbox did not become ready within the ready timeout. */
public class SandboxReadyTimeoutException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public SandboxReadyTimeoutException(String message, Throwable cause, SandboxError error, String requestId) {
        super(message, cause, error != null ? error : new SandboxError(SandboxError.READY_TIMEOUT, message), requestId);
    }

    public SandboxReadyTimeoutException(String message) {
        this(message, null, null, null);
    }
}
