// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.internal;

/** Thrown by the native library; the message is the error as JSON. Never leaves the SDK. */
public final class NativeError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public NativeError(String json) {
        super(json);
    }
}
