// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.transport;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Retry configuration for non-streaming requests, with the official shape and defaults:
 * 3 retries, 500 ms initial backoff, 30 s cap, multiplier 2, decorrelated jitter,
 * statuses 429/502/503 for idempotent methods (GET, HEAD, PUT, DELETE, OPTIONS) and none
 * for POST/PATCH. {@link #disabled()} turns retries off. Set it with
 * {@code ConnectionConfig.builder().retryPolicy(...)}; it is on by default.
 *
 * <p>Retries run in the native core (one policy per {@code ConnectionConfig}), which
 * honours {@code maxRetries}, the backoff, the jitter on/off and the idempotent status
 * set, waits a server's {@code Retry-After} (capped by {@code maxBackoff}), replays a
 * request on any method when the connection could not be established, and on idempotent
 * methods after a broken connection. It does not replay timed-out requests. The knobs it
 * has no equivalent for ({@code retryableStatusCodesNonIdempotent},
 * {@code perAttemptTimeout}, {@code overallDeadline}, {@code onRetry}) are refused
 * by {@code ConnectionConfig.Builder.retryPolicy} with an
 * {@code InvalidArgumentException} rather than ignored. Streaming requests are never
 * retried.
 *
 * <p>From Kotlin, named arguments are not available on this Java class: pass the
 * arguments in the official order (the constructors are the official
 * {@code @JvmOverloads} set).
 */
public final class RetryPolicy {
    /** Default number of retries after the initial attempt. */
    public static final int DEFAULT_MAX_RETRIES = 3;

    /** Default idempotent retryable set: 429, 502, 503. */
    public static final Set<Integer> DEFAULT_IDEMPOTENT_STATUS = Collections.unmodifiableSet(new LinkedHashSet<>(
            java.util.Arrays.asList(StatusCode.TOO_MANY_REQUESTS, StatusCode.BAD_GATEWAY,
                    StatusCode.SERVICE_UNAVAILABLE)));

    private final int maxRetries;
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final double backoffMultiplier;
    private final JitterMode jitter;
    private final Set<Integer> retryableStatusCodesIdempotent;
    private final Set<Integer> retryableStatusCodesNonIdempotent;
    private final Duration perAttemptTimeout;
    private final Duration overallDeadline;
    private final Consumer<RetryEvent> onRetry;

    public RetryPolicy() {
        this(DEFAULT_MAX_RETRIES, Duration.ofMillis(500), Duration.ofSeconds(30), 2.0, JitterMode.DECORRELATED, DEFAULT_IDEMPOTENT_STATUS, Collections.<Integer>emptySet(), null, null, null);
    }

    public RetryPolicy(int maxRetries) {
        this(maxRetries, Duration.ofMillis(500), Duration.ofSeconds(30), 2.0, JitterMode.DECORRELATED, DEFAULT_IDEMPOTENT_STATUS, Collections.<Integer>emptySet(), null, null, null);
    }

    public RetryPolicy(int maxRetries, Duration initialBackoff) {
        this(maxRetries, initialBackoff, Duration.ofSeconds(30), 2.0, JitterMode.DECORRELATED, DEFAULT_IDEMPOTENT_STATUS, Collections.<Integer>emptySet(), null, null, null);
    }

    public RetryPolicy(int maxRetries, Duration initialBackoff, Duration maxBackoff) {
        this(maxRetries, initialBackoff, maxBackoff, 2.0, JitterMode.DECORRELATED, DEFAULT_IDEMPOTENT_STATUS, Collections.<Integer>emptySet(), null, null, null);
    }

    public RetryPolicy(int maxRetries, Duration initialBackoff, Duration maxBackoff, double backoffMultiplier) {
        this(maxRetries, initialBackoff, maxBackoff, backoffMultiplier, JitterMode.DECORRELATED, DEFAULT_IDEMPOTENT_STATUS, Collections.<Integer>emptySet(), null, null, null);
    }

    public RetryPolicy(int maxRetries, Duration initialBackoff, Duration maxBackoff, double backoffMultiplier, JitterMode jitter) {
        this(maxRetries, initialBackoff, maxBackoff, backoffMultiplier, jitter, DEFAULT_IDEMPOTENT_STATUS, Collections.<Integer>emptySet(), null, null, null);
    }

    public RetryPolicy(int maxRetries, Duration initialBackoff, Duration maxBackoff, double backoffMultiplier, JitterMode jitter, Set<Integer> retryableStatusCodesIdempotent) {
        this(maxRetries, initialBackoff, maxBackoff, backoffMultiplier, jitter, retryableStatusCodesIdempotent, Collections.<Integer>emptySet(), null, null, null);
    }

    public RetryPolicy(int maxRetries, Duration initialBackoff, Duration maxBackoff, double backoffMultiplier, JitterMode jitter, Set<Integer> retryableStatusCodesIdempotent, Set<Integer> retryableStatusCodesNonIdempotent) {
        this(maxRetries, initialBackoff, maxBackoff, backoffMultiplier, jitter, retryableStatusCodesIdempotent, retryableStatusCodesNonIdempotent, null, null, null);
    }

    public RetryPolicy(int maxRetries, Duration initialBackoff, Duration maxBackoff, double backoffMultiplier, JitterMode jitter, Set<Integer> retryableStatusCodesIdempotent, Set<Integer> retryableStatusCodesNonIdempotent, Duration perAttemptTimeout) {
        this(maxRetries, initialBackoff, maxBackoff, backoffMultiplier, jitter, retryableStatusCodesIdempotent, retryableStatusCodesNonIdempotent, perAttemptTimeout, null, null);
    }

    public RetryPolicy(int maxRetries, Duration initialBackoff, Duration maxBackoff, double backoffMultiplier, JitterMode jitter, Set<Integer> retryableStatusCodesIdempotent, Set<Integer> retryableStatusCodesNonIdempotent, Duration perAttemptTimeout, Duration overallDeadline) {
        this(maxRetries, initialBackoff, maxBackoff, backoffMultiplier, jitter, retryableStatusCodesIdempotent, retryableStatusCodesNonIdempotent, perAttemptTimeout, overallDeadline, null);
    }

    public RetryPolicy(
            int maxRetries,
            Duration initialBackoff,
            Duration maxBackoff,
            double backoffMultiplier,
            JitterMode jitter,
            Set<Integer> retryableStatusCodesIdempotent,
            Set<Integer> retryableStatusCodesNonIdempotent,
            Duration perAttemptTimeout,
            Duration overallDeadline,
            Consumer<RetryEvent> onRetry) {
        require(maxRetries >= 0, "maxRetries must be >= 0, got " + maxRetries);
        require(initialBackoff != null && !initialBackoff.isNegative(),
                "initialBackoff must be >= 0, got " + initialBackoff);
        require(maxBackoff != null && !maxBackoff.isNegative(), "maxBackoff must be >= 0, got " + maxBackoff);
        require(backoffMultiplier >= 1.0, "backoffMultiplier must be >= 1.0, got " + backoffMultiplier);
        require(perAttemptTimeout == null || (!perAttemptTimeout.isNegative() && !perAttemptTimeout.isZero()),
                "perAttemptTimeout must be > 0 when set, got " + perAttemptTimeout);
        require(overallDeadline == null || (!overallDeadline.isNegative() && !overallDeadline.isZero()),
                "overallDeadline must be > 0 when set, got " + overallDeadline);
        require(jitter != null, "jitter must not be null");
        require(retryableStatusCodesIdempotent != null && retryableStatusCodesNonIdempotent != null,
                "status sets must not be null");
        this.maxRetries = maxRetries;
        this.initialBackoff = initialBackoff;
        this.maxBackoff = maxBackoff;
        this.backoffMultiplier = backoffMultiplier;
        this.jitter = jitter;
        this.retryableStatusCodesIdempotent = Collections.unmodifiableSet(new LinkedHashSet<>(retryableStatusCodesIdempotent));
        this.retryableStatusCodesNonIdempotent =
                Collections.unmodifiableSet(new LinkedHashSet<>(retryableStatusCodesNonIdempotent));
        this.perAttemptTimeout = perAttemptTimeout;
        this.overallDeadline = overallDeadline;
        this.onRetry = onRetry;
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }

    /** No SDK-policy retries. */
    public static RetryPolicy disabled() {
        return new RetryPolicy(0);
    }

    /** Retries after the initial attempt; 0 disables retries. */
    public int getMaxRetries() {
        return maxRetries;
    }

    public Duration getInitialBackoff() {
        return initialBackoff;
    }

    public Duration getMaxBackoff() {
        return maxBackoff;
    }

    public double getBackoffMultiplier() {
        return backoffMultiplier;
    }

    public JitterMode getJitter() {
        return jitter;
    }

    /** Statuses that trigger a retry for GET/HEAD/PUT/DELETE/OPTIONS. */
    public Set<Integer> getRetryableStatusCodesIdempotent() {
        return retryableStatusCodesIdempotent;
    }

    /** Statuses that trigger a retry for POST/PATCH (empty by default). */
    public Set<Integer> getRetryableStatusCodesNonIdempotent() {
        return retryableStatusCodesNonIdempotent;
    }

    public Duration getPerAttemptTimeout() {
        return perAttemptTimeout;
    }

    /** Wall-clock cap across all attempts of one logical request. */
    public Duration getOverallDeadline() {
        return overallDeadline;
    }

    public Consumer<RetryEvent> getOnRetry() {
        return onRetry;
    }

    /** As the official: whether the policy does anything beyond a single plain attempt. */
    public boolean wrapsTransport() {
        return maxRetries > 0 || perAttemptTimeout != null || overallDeadline != null || onRetry != null;
    }

    @Override
    public String toString() {
        return "RetryPolicy(maxRetries=" + maxRetries + ", initialBackoff=" + initialBackoff + ", maxBackoff="
                + maxBackoff + ", backoffMultiplier=" + backoffMultiplier + ", jitter=" + jitter
                + ", retryableStatusCodesIdempotent=" + retryableStatusCodesIdempotent
                + ", retryableStatusCodesNonIdempotent=" + retryableStatusCodesNonIdempotent
                + ", perAttemptTimeout=" + perAttemptTimeout + ", overallDeadline=" + overallDeadline + ")";
    }
}
