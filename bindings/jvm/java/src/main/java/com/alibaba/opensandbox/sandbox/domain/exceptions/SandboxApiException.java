// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** The server answered with an error status; {@link #getStatusCode()} is that status. */
public class SandboxApiException extends SandboxException {
    private static final long serialVersionUID = 1L;

    private final Integer statusCode;

    public SandboxApiException(String message, Integer statusCode, Throwable cause, SandboxError error, String requestId) {
        super(message, cause, error != null ? error : new SandboxError(SandboxError.UNEXPECTED_RESPONSE, message), requestId);
        this.statusCode = statusCode;
    }

    public SandboxApiException(String message, Integer statusCode) {
        this(message, statusCode, null, null, null);
    }

    public Integer getStatusCode() {
        return statusCode;
    }
}
