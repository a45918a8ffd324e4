// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.exceptions;

/** The error carried by every {@link SandboxException}: a code and a message. */
public final class SandboxError {
    public static final String INTERNAL_UNKNOWN_ERROR = "INTERNAL_UNKNOWN_ERROR";
    public static final String READY_TIMEOUT = "READY_TIMEOUT";
    public static final String UNHEALTHY = "UNHEALTHY";
    public static final String INVALID_ARGUMENT = "INVALID_ARGUMENT";
    public static final String UNEXPECTED_RESPONSE = "UNEXPECTED_RESPONSE";
    public static final String FILE_NOT_FOUND = "FILE_NOT_FOUND";

    private final String code;
    private final String message;

    public SandboxError(String code, String message) {
        this.code = code;
        this.message = message;
    }

    public SandboxError(String code) {
        this(code, null);
    }

    public String getCode() {
        return code;
    }

    public String getMessage() {
        return message;
    }

    @Override
    public String toString() {
        return "SandboxError(code=" + code + ", message=" + message + ")";
    }
}
