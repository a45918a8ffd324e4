// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.transport;

/** Well-known HTTP status codes for composing {@link RetryPolicy} status sets. */
public final class StatusCode {
    public static final int REQUEST_TIMEOUT = 408;
    public static final int TOO_EARLY = 425;
    public static final int TOO_MANY_REQUESTS = 429;
    public static final int INTERNAL_SERVER_ERROR = 500;
    public static final int BAD_GATEWAY = 502;
    public static final int SERVICE_UNAVAILABLE = 503;
    public static final int GATEWAY_TIMEOUT = 504;

    public static final StatusCode INSTANCE = new StatusCode();

    private StatusCode() {
    }
}
