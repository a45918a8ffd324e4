// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

/** How a destroy treats idle sandboxes: only {@code FORCE} (kill them). */
public enum PoolDestroyStrategy {
    FORCE
}
