// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.transport;

/**
 * Backoff jitter algorithm of a {@link RetryPolicy}. The native core randomises each
 * wait in {@code [wait/2, wait]}: {@code FULL} and {@code DECORRELATED} both map to that,
 * {@code NONE} to exact exponential waits.
 */
public enum JitterMode {
    NONE,
    FULL,
    DECORRELATED
}
