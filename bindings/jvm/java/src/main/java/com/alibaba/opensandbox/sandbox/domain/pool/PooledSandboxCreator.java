// Part of the OpenSandbox JVM package (Apache-2.0).
package com.alibaba.opensandbox.sandbox.domain.pool;

import com.alibaba.opensandbox.sandbox.Sandbox;

/**
 * (1.1) Creates the pool's sandboxes instead of {@code Sandbox.builder()} from the creation
 * spec (warmups and direct creates). The pool still owns warmup preparation, idle
 * membership, renew and cleanup; return a usable sandbox, applying the context's readiness
 * settings and its {@code idleTimeout} where they apply.
 */
@FunctionalInterface
public interface PooledSandboxCreator {
    Sandbox create(PooledSandboxCreateContext context);
}
