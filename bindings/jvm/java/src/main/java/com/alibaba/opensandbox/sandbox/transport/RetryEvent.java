// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.transport;

import java.time.Duration;
import java.util.Objects;

/**
 * The official payload of {@code RetryPolicy.onRetry}. Retries happen inside the native
 * core here, which reports no per-retry events: a policy with an {@code onRetry} hook is
 * refused by {@code ConnectionConfig.Builder.retryPolicy}. The class exists so code that
 * names it compiles.
 */
public final class RetryEvent {
    private final int attempt;
    private final int retriesUsed;
    private final String method;
    private final String url;
    private final RetryCause cause;
    private final Integer statusCode;
    private final Duration backoff;
    private final String requestId;
    private final Throwable exception;

    public RetryEvent(int attempt, int retriesUsed, String method, String url, RetryCause cause,
            Integer statusCode, Duration backoff, String requestId, Throwable exception) {
        this.attempt = attempt;
        this.retriesUsed = retriesUsed;
        this.method = Objects.requireNonNull(method, "method");
        this.url = Objects.requireNonNull(url, "url");
        this.cause = Objects.requireNonNull(cause, "cause");
        this.statusCode = statusCode;
        this.backoff = Objects.requireNonNull(backoff, "backoff");
        this.requestId = requestId;
        this.exception = exception;
    }

    /** 1-based index of the upcoming attempt (retry #1 is {@code attempt=2}). */
    public int getAttempt() {
        return attempt;
    }

    public int getRetriesUsed() {
        return retriesUsed;
    }

    public String getMethod() {
        return method;
    }

    public String getUrl() {
        return url;
    }

    public RetryCause getCause() {
        return cause;
    }

    public Integer getStatusCode() {
        return statusCode;
    }

    public Duration getBackoff() {
        return backoff;
    }

    public String getRequestId() {
        return requestId;
    }

    public Throwable getException() {
        return exception;
    }

    @Override
    public String toString() {
        return "RetryEvent(attempt=" + attempt + ", retriesUsed=" + retriesUsed + ", method=" + method
                + ", url=" + url + ", cause=" + cause + ", statusCode=" + statusCode + ", backoff=" + backoff
                + ", requestId=" + requestId + ")";
    }
}
