// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/**
 * Base of every SDK error. {@link #getError()} holds the server error code (or an SDK
 * code such as {@link SandboxError#READY_TIMEOUT}); {@link #getRequestId()} the
 * {@code X-Request-ID} of the failed call. {@link #getKind()} is this package's stable
 * error kind ({@code api, not_found, unauthorized, timeout, ready_timeout, connection,
 * stream, invalid_argument, cancelled, internal}), an addition to the official surface.
 */
public class SandboxException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final SandboxError error;
    private final String requestId;
    private String kind;

    public SandboxException(String message, Throwable cause, SandboxError error, String requestId) {
        super(message, cause);
        this.error = error != null ? error : new SandboxError(SandboxError.INTERNAL_UNKNOWN_ERROR, message);
        this.requestId = requestId;
    }

    public SandboxException(String message) {
        this(message, null, null, null);
    }

    public SandboxError getError() {
        return error;
    }

    public String getRequestId() {
        return requestId;
    }

    public String getKind() {
        if (kind != null) {
            return kind;
        }
        if (this instanceof InvalidArgumentException) {
            return "invalid_argument";
        }
        if (this instanceof SandboxReadyTimeoutException) {
            return "ready_timeout";
        }
        if (this instanceof SandboxApiException) {
            Integer status = ((SandboxApiException) this).getStatusCode();
            if (status != null && status == 404) {
                return "not_found";
            }
            if (status != null && (status == 401 || status == 403)) {
                return "unauthorized";
            }
            return "api";
        }
        return "internal";
    }

    /** Internal: set by the native error mapping. */
    public SandboxException withKind(String kind) {
        if (kind != null) {
            this.kind = kind;
        }
        return this;
    }
}
